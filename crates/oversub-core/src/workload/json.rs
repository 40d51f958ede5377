//! The JSON dialect of rt-app files: JSON as json-c reads it (C comments
//! `/* */` and `//` allowed), kept as an *ordered* tree with duplicate keys
//! preserved, because rt-app events are the keys of an object and their
//! order is the program order.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A JSON value whose objects keep their keys in file order, duplicates
/// included.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// A short name of the value's type, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Int(_) => "an integer",
            Json::Float(_) => "a number",
            Json::Str(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl std::fmt::Display for Json {
    /// Compact JSON (keys in order, duplicates kept as they are).
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Int(i) => write!(f, "{i}"),
            Json::Float(x) => write!(f, "{}", serde_json::Value::from(*x)),
            Json::Str(s) => write!(f, "{}", serde_json::Value::from(s.as_str())),
            Json::Array(a) => {
                f.write_str("[")?;
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            Json::Object(kv) => {
                f.write_str("{")?;
                for (i, (k, x)) in kv.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:{x}", serde_json::Value::from(k.as_str()))?;
                }
                f.write_str("}")
            }
        }
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        // Beyond i64: kept as a number, so that the field that reads it
        // names itself in the error ([`super::rtapp`]'s `int`: out of range).
        Ok(i64::try_from(v).map_or(Json::Float(v as f64), Json::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element()? {
            v.push(x);
        }
        Ok(Json::Array(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut v = Vec::new();
        while let Some((k, x)) = map.next_entry::<String, Json>()? {
            v.push((k, x));
        }
        Ok(Json::Object(v))
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

/// Blanks out C comments (`/* ... */`, `// ...`) outside strings, keeping
/// newlines so that error positions stay right. An unterminated block
/// comment is an error.
pub fn strip_comments(src: &str) -> Result<String, String> {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            out.push(c);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1]);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
            i += 1;
        } else if c == b'"' {
            in_str = true;
            out.push(c);
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let start_line = src[..i].matches('\n').count() + 1;
            let Some(end) = src[i + 2..].find("*/") else {
                return Err(format!("line {start_line}: unterminated /* comment"));
            };
            for &x in &b[i..i + 2 + end + 2] {
                out.push(if x == b'\n' { b'\n' } else { b' ' });
            }
            i += 2 + end + 2;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    // Only ASCII bytes were replaced by ASCII, so this stays UTF-8.
    String::from_utf8(out).map_err(|e| e.to_string())
}

/// Blanks out trailing commas (a `,` followed only by whitespace before `}`
/// or `]`), which json-c accepts, outside strings.
pub fn strip_trailing_commas(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut in_str = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if c == b',' {
            let next = b[i + 1..].iter().find(|x| !x.is_ascii_whitespace());
            if matches!(next, Some(b'}') | Some(b']')) {
                out[i] = b' ';
            }
        }
        i += 1;
    }
    String::from_utf8(out).expect("only an ASCII byte was replaced")
}

/// Parses rt-app JSON text (comments and trailing commas allowed, as json-c
/// reads it) into an ordered tree. The error is one line: "line L column C:
/// what".
pub fn parse(src: &str) -> Result<Json, String> {
    let clean = strip_trailing_commas(&strip_comments(src)?);
    serde_json::from_str::<Json>(&clean).map_err(|e| {
        let msg = e.to_string();
        // serde_json appends " at line L column C"; put the place first.
        match msg.rfind(" at line ") {
            Some(i) => format!("{}: {}", &msg[i + 4..], &msg[..i]),
            None => msg,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_duplicates() {
        let j = parse(r#"{"b": 1, "a": [true, null, 2.5], "b": "x"}"#).unwrap();
        let Json::Object(kv) = j else { panic!() };
        let keys: Vec<&str> = kv.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "b"]);
        assert_eq!(kv[2].1, Json::Str("x".into()));
        assert_eq!(
            kv[1].1,
            Json::Array(vec![Json::Bool(true), Json::Null, Json::Float(2.5)])
        );
    }

    #[test]
    fn writes_back_what_it_read() {
        let src = r#"{"a":[1,-2,2.5,"x\"y",null,true],"a":{"b":{}}}"#;
        assert_eq!(parse(src).unwrap().to_string(), src);
    }

    #[test]
    fn comments_are_blanked_outside_strings() {
        let src = "{\n /* a\n b */ \"k\": \"/* not a comment */\", // tail\n \"n\": 3 }";
        let Json::Object(kv) = parse(src).unwrap() else {
            panic!()
        };
        assert_eq!(kv[0].1, Json::Str("/* not a comment */".into()));
        assert_eq!(kv[1].1, Json::Int(3));
        assert!(parse("{ /* open").unwrap_err().contains("unterminated"));
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = parse("{\n\"a\": 1,\n\"b\"}").unwrap_err();
        assert!(e.starts_with("line 3 column"), "{e}");
    }

    #[test]
    fn trailing_commas_are_accepted_like_json_c() {
        let j = parse("{\"a\": [1, 2, ], \"s\": \",}\", }").unwrap();
        assert_eq!(
            j,
            Json::Object(vec![
                ("a".into(), Json::Array(vec![Json::Int(1), Json::Int(2)])),
                ("s".into(), Json::Str(",}".into()))
            ])
        );
    }
}
