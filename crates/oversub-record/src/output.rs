//! The recorded program's own output: its last part kept (bounded, however
//! much the program writes) and the op count read from it (`--ops-from`).

/// The number after the last occurrence of `text` in `output`.
pub fn ops_from(output: &str, text: &str) -> Option<u64> {
    let i = output.rfind(text)? + text.len();
    let rest = output[i..].trim_start();
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    digits.parse().ok()
}

/// The most of a recorded program's output kept (its end): for
/// `--ops-from` and the report.
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// The last [`MAX_OUTPUT_BYTES`] of a stream, and how much came before.
#[derive(Default)]
pub(crate) struct Tail {
    kept: std::collections::VecDeque<u8>,
    dropped: u64,
}

impl Tail {
    pub(crate) fn push(&mut self, b: &[u8]) {
        self.kept.extend(b);
        let over = self.kept.len().saturating_sub(MAX_OUTPUT_BYTES);
        if over > 0 {
            self.kept.drain(..over);
            self.dropped += over as u64;
        }
    }

    /// The kept text (from its first whole line when the start was cut),
    /// after a line saying how much was left out.
    pub(crate) fn text(self) -> String {
        let bytes: Vec<u8> = self.kept.into_iter().collect();
        if self.dropped == 0 {
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        let start = bytes.iter().position(|&c| c == b'\n').map_or(0, |i| i + 1);
        format!(
            "[oversub record: the program's first {} bytes of output are not shown]\n{}",
            self.dropped + start as u64,
            String::from_utf8_lossy(&bytes[start..])
        )
    }
}
