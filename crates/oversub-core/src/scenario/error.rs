//! Scenario errors: one line naming the file, the field and what is
//! allowed, and the translation of TOML and serde errors into that line.

use super::Ctx;
use std::fmt;

/// A scenario error: always one line, naming the file and the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: String,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    /// `file: field: message`, with any control character that came from the
    /// input (a key or value with an escaped newline, say) written as its
    /// escape, so that the error stays one line whatever the input held.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A key or value of megabytes is cut (limits::echo), the message
        // kept to a line a person reads.
        let field = crate::limits::echo_n(&self.field, 2 * crate::limits::MAX_ECHO_CHARS);
        let message = crate::limits::echo_n(&self.message, 12 * crate::limits::MAX_ECHO_CHARS);
        let mut parts = vec![self.file.as_str()];
        if !self.field.is_empty() {
            parts.push(&field);
        }
        parts.push(&message);
        for (i, part) in parts.into_iter().enumerate() {
            if i > 0 {
                f.write_str(": ")?;
            }
            for c in part.chars() {
                if c.is_control() {
                    write!(f, "{}", c.escape_default())?;
                } else {
                    write!(f, "{c}")?;
                }
            }
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

/// Where a TOML error sits, as "line L" (1-based) when known.
pub(super) fn toml_location(src: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => {
            let line = src[..span.start.min(src.len())].matches('\n').count() + 1;
            format!("line {line}")
        }
        None => String::new(),
    }
}

/// A TOML or shape error as one line naming the field: serde's path
/// (`task[0].cpus`) and its message with Rust type names replaced by the
/// scenario format's ("an integer", "an array", ...). Syntax errors name the
/// line. Written for any key, so keys added later are covered as they are.
pub(super) fn toml_error(
    cx: &Ctx,
    src: &str,
    e: serde_path_to_error::Error<toml::de::Error>,
) -> ScenarioError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let msg = inner.message().replace('\n', " ").trim().to_string();
    let (field, msg) = match (path.as_str(), humanize_serde(&msg)) {
        // No field known (a syntax error): the line is the best place.
        (".", _) | ("", _) => {
            if msg.contains("too large to fit") {
                let m = format!("{msg}: allowed integers -{} ..= {}", i64::MAX, i64::MAX);
                let field = inner
                    .span()
                    .and_then(|sp| key_at(src, sp.start))
                    .unwrap_or_else(|| toml_location(src, &inner));
                return cx.err(field, m);
            }
            (toml_location(src, &inner), format!("TOML syntax: {msg}"))
        }
        (p, Some(h)) => {
            // "[name]" in a message is the table's own name.
            let leaf = p.rsplit('.').next().unwrap_or(p);
            let leaf = leaf.split('[').next().unwrap_or(leaf);
            (p.to_string(), h.replace("name]", &format!("{leaf}]")))
        }
        (p, None) => (p.to_string(), msg),
    };
    cx.err(field, msg)
}

/// The dotted key whose value sits at byte `at` of `src` (`host.cpus`,
/// `task.count`), read from the line's `key =` and the table header above
/// it: for errors the TOML parser reports before it knows the field.
fn key_at(src: &str, at: usize) -> Option<String> {
    let at = at.min(src.len());
    let start = src[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &src[start..];
    let key = line.split('=').next()?.trim();
    if key.is_empty() || key.len() > 200 || key.contains(['[', '\n']) {
        return None;
    }
    let table = src[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    Some(match table {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key.to_string(),
    })
}

/// The scenario format's name of a serde "expected" phrase.
fn human_type(expected: &str) -> String {
    let e = expected.trim();
    let t = match e {
        "i8" | "i16" | "i32" | "i64" | "i128" | "u8" | "u16" | "u32" | "u64" | "u128" | "isize"
        | "usize" => "an integer",
        "f32" | "f64" => "a number",
        "a boolean" | "bool" => "a boolean (true or false)",
        "a string" | "string" | "a borrowed string" => "a string",
        "a sequence" => "an array ([...], or [[...]] for tables)",
        "a map" => "a table",
        _ if e.starts_with("struct ") => "a table",
        _ => return e.to_string(),
    };
    t.to_string()
}

/// The scenario format's name of a serde "unexpected" value.
fn human_value(v: &str) -> String {
    let v = v.trim();
    for (pre, name) in [
        ("string ", "a string"),
        ("integer ", "an integer"),
        ("floating point ", "a number"),
        ("boolean ", "a boolean"),
    ] {
        if let Some(x) = v.strip_prefix(pre) {
            return format!("{} ({name})", x.trim_matches('`'));
        }
    }
    match v {
        "map" => "a table".into(),
        "sequence" => "an array".into(),
        o => o.to_string(),
    }
}

/// Rewrites serde's messages that name Rust types or internals.
pub(super) fn humanize_serde(msg: &str) -> Option<String> {
    if let Some(rest) = msg.strip_prefix("invalid type: ") {
        let (got, want) = rest.split_once(", expected ")?;
        if got == "map" && want == "a sequence" {
            return Some("a table ([name]) where an array of tables ([[name]]) is expected".into());
        }
        return Some(format!(
            "{} is not allowed: expected {}",
            human_value(got),
            human_type(want)
        ));
    }
    if let Some(rest) = msg.strip_prefix("invalid value: ") {
        let (got, want) = rest.split_once(", expected ")?;
        return Some(format!(
            "{} is out of range: expected {}",
            human_value(got),
            human_type(want)
        ));
    }
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let (name, allowed) = rest.split_once('`')?;
        let allowed = allowed
            .trim_start_matches(", expected one of ")
            .trim_start_matches(", expected ")
            .replace('`', "");
        let allowed = if allowed.trim().is_empty() || allowed.contains("there are no fields") {
            "none".to_string()
        } else {
            allowed
        };
        return Some(format!("unknown key \"{name}\": allowed {allowed}"));
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let name = rest.split('`').next()?;
        return Some(format!("required key \"{name}\" is missing"));
    }
    None
}
