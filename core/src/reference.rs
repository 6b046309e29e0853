//! Image references, validated the way the distribution grammar defines them, so a bad one is
//! refused before anything is pulled, written or restarted.

use std::fmt;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RefError {
    #[error(
        "image reference {0:?} is invalid: {1}; write it as [REGISTRY/]PATH[:TAG][@sha256:DIGEST], for example 127.0.0.1:5000/svc:1.0"
    )]
    Invalid(String, &'static str),
}

/// A validated image reference, kept as written (podman resolves short names itself).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageRef(String);

impl ImageRef {
    pub fn parse(raw: &str) -> Result<Self, RefError> {
        let bad = |why| Err(RefError::Invalid(raw.to_string(), why));
        if raw.is_empty() {
            return bad("it is empty");
        }
        if raw.len() > 255 {
            return bad("it is longer than 255 characters");
        }
        let (name_tag, digest) = match raw.split_once('@') {
            Some((n, d)) => (n, Some(d)),
            None => (raw, None),
        };
        if let Some(d) = digest {
            let ok = d.strip_prefix("sha256:").is_some_and(|h| {
                h.len() == 64
                    && h.chars()
                        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            });
            if !ok {
                return bad("the digest is not sha256: and 64 lowercase hex digits");
            }
        }
        // A tag follows the last ':' that comes after the last '/' (a ':' before it is a port).
        let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name_tag[last_slash..].rfind(':') {
            Some(i) => (
                &name_tag[..last_slash + i],
                Some(&name_tag[last_slash + i + 1..]),
            ),
            None => (name_tag, None),
        };
        if let Some(t) = tag {
            let ok = !t.is_empty()
                && t.len() <= 128
                && t.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
            if !ok {
                return bad("the tag must be 1-128 of [A-Za-z0-9_.-], not starting with . or -");
            }
        }
        let mut parts: Vec<&str> = name.split('/').collect();
        if parts.len() > 1 && looks_like_domain(parts[0]) {
            if !valid_domain(parts[0]) {
                return bad("the registry host is not a valid host[:port]");
            }
            parts.remove(0);
        }
        if parts.is_empty() || !parts.iter().all(|p| valid_path_component(p)) {
            return bad(
                "each path component must be lowercase letters and digits, separated by . _ __ or -",
            );
        }
        Ok(ImageRef(raw.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tagged reference taken apart: `reg:5000/app` and `1.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepoTag<'a> {
    pub repo: &'a str,
    pub tag: &'a str,
}

/// The repository and tag of a reference, split as the grammar says: a tag's `:` comes after
/// the last `/` (one before it is a registry port), and no tag means `latest`. None for a
/// digest-pinned reference, which names one image and takes no tag.
pub fn repo_and_tag(raw: &str) -> Option<RepoTag<'_>> {
    if raw.contains('@') {
        return None;
    }
    let last_slash = raw.rfind('/').map_or(0, |i| i + 1);
    Some(match raw[last_slash..].rfind(':') {
        Some(i) => RepoTag {
            repo: &raw[..last_slash + i],
            tag: &raw[last_slash + i + 1..],
        },
        None => RepoTag {
            repo: raw,
            tag: "latest",
        },
    })
}

fn looks_like_domain(s: &str) -> bool {
    s.contains('.')
        || s.contains(':')
        || s == "localhost"
        || s.chars().any(|c| c.is_ascii_uppercase())
}

fn valid_domain(s: &str) -> bool {
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    let host_ok = !host.is_empty()
        && host.split('.').all(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit()));
    host_ok && port_ok
}

fn valid_path_component(p: &str) -> bool {
    if p.is_empty() || !p.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return false;
    }
    if !p.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return false;
    }
    let mut prev_sep = String::new();
    for c in p.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if !prev_sep.is_empty()
                && !matches!(prev_sep.as_str(), "." | "_" | "__")
                && !prev_sep.chars().all(|x| x == '-')
            {
                return false;
            }
            prev_sep.clear();
        } else if "._-".contains(c) {
            prev_sep.push(c);
        } else {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_references_parse() {
        for ok in [
            "busybox",
            "svc:1.0",
            "127.0.0.1:5000/svc:1.0.1",
            "localhost/refit/keep:abc",
            "quay.io/foreman/foreman:3.16",
            "docker.io/library/nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "a__b/c--d",
        ] {
            assert!(ImageRef::parse(ok).is_ok(), "{ok} was refused");
        }
    }

    #[test]
    fn repo_and_tag_follow_the_grammar_not_the_last_colon() {
        let split = |repo, tag| Some(RepoTag { repo, tag });
        assert_eq!(
            repo_and_tag("reg:5000/app"),
            split("reg:5000/app", "latest")
        );
        assert_eq!(
            repo_and_tag("reg:5000/app:1.0"),
            split("reg:5000/app", "1.0")
        );
        assert_eq!(repo_and_tag("app"), split("app", "latest"));
        let pinned = format!("reg:5000/app@sha256:{}", "a".repeat(64));
        assert_eq!(repo_and_tag(&pinned), None);
    }

    #[test]
    fn invalid_references_are_refused() {
        for bad in [
            "",
            "Svc:1",
            "svc:",
            "svc:-x",
            "a//b",
            "svc@sha256:xyz",
            "s vc",
            "svc:1\nExec=x",
            "-svc",
        ] {
            assert!(ImageRef::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
