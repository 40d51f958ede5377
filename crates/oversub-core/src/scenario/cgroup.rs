//! Cgroup paths of a scenario: normalisation and the parent of a path.

/// Normalises "/a/b" (no empty, "." or ".." components, no trailing slash).
pub fn validate_cgroup_path(p: &str) -> Result<String, String> {
    if !p.starts_with('/') {
        return Err(format!("\"{p}\" must be absolute (start with '/')"));
    }
    if p == "/" {
        return Ok("/".into());
    }
    let parts: Vec<&str> = p[1..].split('/').collect();
    for c in &parts {
        if c.is_empty() || *c == "." || *c == ".." {
            return Err(format!(
                "\"{p}\" has an empty, '.' or '..' component: allowed /name/name/..."
            ));
        }
        if !c
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "_-.".contains(ch))
        {
            return Err(format!(
                "\"{p}\": component \"{c}\" may use letters, digits, '_', '-', '.'"
            ));
        }
    }
    Ok(format!("/{}", parts.join("/")))
}

/// Parent of a normalised cgroup path.
pub fn parent_path(p: &str) -> String {
    match p.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => p[..i].into(),
    }
}
