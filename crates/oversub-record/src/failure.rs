//! How `oversub record` and `oversub derive` fail: one line and an exit
//! code.

/// A failed recording: the message (one line) and the exit code (2 for bad
/// input or unavailable tracing, 130 when interrupted).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

pub(crate) fn fail(m: impl Into<String>) -> Failure {
    Failure {
        code: 2,
        message: m.into(),
    }
}
