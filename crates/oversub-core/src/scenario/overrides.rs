//! `--set KEY=VALUE`: scenario overrides by dotted path (`host.duration=2s`,
//! `host.yield.yield_to=deboost`, `vm.0.vcpus=8`). The value is parsed as a
//! TOML value, a bare word as a string. Overrides are applied to the file's
//! TOML table before validation, so an override is checked exactly like the
//! same key written in the file.

use toml::{Table, Value};

/// One parsed `--set` argument.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// The argument as given (for error messages).
    pub arg: String,
    pub path: Vec<String>,
    pub value: Value,
    /// The value text as given: an unquoted `6.12` is a float in TOML; where
    /// the field wants a string, the override is retried with this text.
    pub raw: String,
}

/// Parses `KEY=VALUE`.
pub fn parse_override(arg: &str) -> Result<Override, String> {
    let Some((key, raw)) = arg.split_once('=') else {
        return Err(format!(
            "--set {arg}: expected KEY=VALUE (e.g. host.duration=2s)"
        ));
    };
    let key = key.trim();
    let path: Vec<String> = key.split('.').map(|s| s.trim().to_string()).collect();
    if path.iter().any(|s| s.is_empty()) {
        return Err(format!(
            "--set {arg}: \"{key}\" is not a dotted key: allowed name.name or name.INDEX.name"
        ));
    }
    let raw = raw.trim();
    let value = match toml::from_str::<Table>(&format!("v = {raw}")) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| Value::String(raw.to_string())),
        Err(_) => Value::String(raw.to_string()),
    };
    Ok(Override {
        arg: arg.to_string(),
        path,
        value,
        raw: raw.to_string(),
    })
}

impl Override {
    /// The same override with its value taken as a string.
    pub fn as_string(&self) -> Override {
        Override {
            value: Value::String(self.raw.clone()),
            ..self.clone()
        }
    }
}

/// Applies one override to a scenario table; intermediate tables are
/// created, array elements are addressed by index.
pub fn apply(root: &mut Table, o: &Override) -> Result<(), String> {
    let mut cur: &mut Value = {
        let first = &o.path[0];
        if o.path.len() == 1 {
            root.insert(first.clone(), o.value.clone());
            return Ok(());
        }
        if !root.contains_key(first) && o.path[1].parse::<usize>().is_ok() {
            return Err(format!(
                "\"{first}\" has 0 entries: index {} is out of range: allowed an index of an entry the file has",
                o.path[1]
            ));
        }
        root.entry(first.clone())
            .or_insert_with(|| Value::Table(Table::new()))
    };
    for (i, seg) in o.path.iter().enumerate().skip(1) {
        let last = i == o.path.len() - 1;
        let here = o.path[..i].join(".");
        cur = match cur {
            Value::Table(t) => {
                if last {
                    t.insert(seg.clone(), o.value.clone());
                    return Ok(());
                }
                if !t.contains_key(seg) && o.path[i + 1].parse::<usize>().is_ok() {
                    return Err(format!(
                        "\"{here}.{seg}\" has 0 entries: index {} is out of range: allowed an index of an entry the file has",
                        o.path[i + 1]
                    ));
                }
                t.entry(seg.clone())
                    .or_insert_with(|| Value::Table(Table::new()))
            }
            Value::Array(a) => {
                let n = a.len();
                let idx: usize = seg.parse().map_err(|_| {
                    format!(
                        "\"{here}\" is a list: \"{seg}\" is not an index (allowed 0 ..= {})",
                        n.saturating_sub(1)
                    )
                })?;
                if idx >= n {
                    return Err(format!(
                        "\"{here}\" has {n} entries: index {idx} is out of range: allowed 0 ..= {}",
                        n - 1
                    ));
                }
                if last {
                    a[idx] = o.value.clone();
                    return Ok(());
                }
                &mut a[idx]
            }
            _ => {
                return Err(format!(
                    "\"{here}\" is a value, not a table: cannot set \"{seg}\" in it"
                ));
            }
        };
    }
    Ok(())
}
