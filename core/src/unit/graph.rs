//! References between quadlet units, and each unit's effective revision.
//!
//! A unit refers to others as quadlet reads them: `Image=X.image` or `Image=X.build`,
//! `Pod=X.pod`, `Network=X.network`, `Volume=X.volume:/path` and `Mount=…,source=X.volume`.
//! Its *effective revision* is the hash of its own revision (text and drop-ins), the effective
//! revisions of what it refers to, and its extra inputs. "What must restart" is "whose effective
//! revision changed", so a changed `.volume` restarts exactly the containers that mount it.
//!
//! Extra inputs are the seam for what lies outside the unit files (a secret refit did not
//! make, a file named in `restart_on_change`): whoever knows such an input adds an
//! `ExtraInput` to the unit's node, and it counts like a reference. Pure code.

use super::file::{UnitFile, unquote};
use super::kind::Kind;
use super::revision::hex;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// One reference of a unit to another, as its text says it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    /// The key that makes it, with its section: `Container.Volume`.
    pub key: String,
    /// The unit referred to, by file name: `db.volume`.
    pub to: String,
}

/// Something outside the unit files that the unit's revision covers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ExtraInput {
    /// What it is, as results name it: `secret:db-password`, `file:/etc/app/app.conf`.
    pub name: String,
    /// A hash of its content; never the content itself.
    pub digest: String,
}

/// What a unit's effective revision covers besides its own: the effective revisions of the
/// units it refers to, and its extra inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    pub refs: Vec<RefRevision>,
    pub extra: Vec<ExtraInput>,
}

/// A unit referred to, and its effective revision: what a referring unit's revision covers of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RefRevision {
    pub unit: String,
    pub revision: String,
}

impl Inputs {
    /// The effective revision of a unit whose own revision is `own`: `own` itself when there
    /// is nothing else, else the hash of all of it (in a fixed order).
    pub fn effective(&self, own: &str) -> String {
        if self.refs.is_empty() && self.extra.is_empty() {
            return own.to_string();
        }
        let mut refs = self.refs.clone();
        refs.sort();
        refs.dedup();
        let mut extra = self.extra.clone();
        extra.sort();
        let mut h = Sha256::new();
        h.update(format!("own {own}\n").as_bytes());
        for r in &refs {
            h.update(format!("ref {} {}\n", r.unit, r.revision).as_bytes());
        }
        for e in &extra {
            h.update(format!("extra {} {}\n", e.name, e.digest).as_bytes());
        }
        hex(&h.finalize())
    }
}

/// A unit in the graph: its own revision, what it refers to, and its extra inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    pub own: String,
    pub refs: Vec<Reference>,
    pub extra: Vec<ExtraInput>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error(
        "{from} refers to {to} ({key}={to}), which is neither in this run nor in the quadlet dir; add {to} to `units`, or take the reference out of {from}"
    )]
    Dangling {
        from: String,
        to: String,
        key: String,
    },
    #[error(
        "{from} and {to} refer to each other (through {path}); quadlet cannot order them: take one of the references out"
    )]
    Cycle {
        from: String,
        to: String,
        path: String,
    },
}

/// The units `unit` (of `kind`) refers to, in the order its text names them.
pub fn references(kind: Kind, unit: &UnitFile) -> Vec<Reference> {
    let section = kind.section();
    let mut out = Vec::new();
    let mut add = |key: &str, to: &str| {
        let r = Reference {
            key: format!("{section}.{key}"),
            to: to.to_string(),
        };
        if !out.contains(&r) {
            out.push(r);
        }
    };
    let named = |v: &str, kinds: &[Kind]| -> Option<String> {
        let (_, ext) = v.rsplit_once('.')?;
        let k = Kind::from_ext(ext)?;
        kinds.contains(&k).then(|| v.to_string())
    };
    for entry in unit.section(section).map_or(&[][..], |s| &s.entries) {
        let v = unquote(&entry.value);
        let found = match entry.key.as_str() {
            "Image" => named(v, &[Kind::Image, Kind::Build]),
            "Pod" => named(v, &[Kind::Pod]),
            // `app.network:ip=10.0.0.2` names `app.network`.
            "Network" => named(v.split(':').next().unwrap_or(v), &[Kind::Network]),
            // `db.volume:/data:Z` names `db.volume`.
            "Volume" => named(v.split(':').next().unwrap_or(v), &[Kind::Volume]),
            "Mount" => v
                .split(',')
                .filter_map(|f| f.strip_prefix("source=").or_else(|| f.strip_prefix("src=")))
                .find_map(|s| named(s, &[Kind::Volume, Kind::Image])),
            _ => None,
        };
        if let Some(to) = found {
            add(&entry.key, &to);
        }
    }
    out
}

/// The image an `.image` unit pulls or a `.build` unit tags, as its containers run it:
/// quadlet 5.4 runs an `.image`'s `ImageTag=` when it has one, else its `Image=`.
pub fn image_of(kind: Kind, unit: &UnitFile) -> Option<String> {
    let section = kind.section();
    match kind {
        Kind::Image => unit
            .value(section, "ImageTag")
            .or_else(|| unit.value(section, "Image")),
        Kind::Build => unit.value(section, "ImageTag"),
        _ => None,
    }
    .map(str::to_string)
}

/// The effective revision of every unit in `nodes`: its own revision when it refers to
/// nothing and has no extra inputs (so such a unit keeps the revision it always had), else the
/// hash of its own revision, each reference's effective revision, and each extra input.
pub fn effective(nodes: &BTreeMap<String, Node>) -> Result<BTreeMap<String, String>, GraphError> {
    let mut done: BTreeMap<String, String> = BTreeMap::new();
    for (name, node) in nodes {
        let mut path = Vec::new();
        visit(name, node, nodes, &mut done, &mut path)?;
    }
    Ok(done)
}

fn visit(
    name: &str,
    node: &Node,
    nodes: &BTreeMap<String, Node>,
    done: &mut BTreeMap<String, String>,
    path: &mut Vec<String>,
) -> Result<String, GraphError> {
    if let Some(rev) = done.get(name) {
        return Ok(rev.clone());
    }
    if let Some(at) = path.iter().position(|p| p == name) {
        let mut cycle = path[at..].to_vec();
        cycle.push(name.to_string());
        return Err(GraphError::Cycle {
            from: path[at].clone(),
            to: path[path.len() - 1].clone(),
            path: cycle.join(" -> "),
        });
    }
    path.push(name.to_string());
    let mut refs = Vec::with_capacity(node.refs.len());
    for r in &node.refs {
        let Some(to) = nodes.get(&r.to) else {
            return Err(GraphError::Dangling {
                from: name.to_string(),
                to: r.to.clone(),
                key: r.key.clone(),
            });
        };
        refs.push(RefRevision {
            unit: r.to.clone(),
            revision: visit(&r.to, to, nodes, done, path)?,
        });
    }
    path.pop();
    let inputs = Inputs {
        refs,
        extra: node.extra.clone(),
    };
    let rev = inputs.effective(&node.own);
    done.insert(name.to_string(), rev.clone());
    Ok(rev)
}

/// The units that refer, directly or through others, to `changed`: what a change of it
/// restarts.
pub fn users_of(changed: &str, nodes: &BTreeMap<String, Node>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut queue = vec![changed.to_string()];
    while let Some(n) = queue.pop() {
        for (name, node) in nodes {
            if node.refs.iter().any(|r| r.to == n) && !out.contains(name) {
                out.push(name.clone());
                queue.push(name.clone());
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(own: &str, text: &str, kind: Kind) -> Node {
        Node {
            own: own.into(),
            refs: references(kind, &UnitFile::parse(text).expect("parses")),
            extra: Vec::new(),
        }
    }

    fn stack(volume_rev: &str) -> BTreeMap<String, Node> {
        BTreeMap::from([
            (
                "app.network".into(),
                node("n1", "[Network]\n", Kind::Network),
            ),
            (
                "db.volume".into(),
                node(volume_rev, "[Volume]\n", Kind::Volume),
            ),
            (
                "app.image".into(),
                node("i1", "[Image]\nImage=r/app:1\n", Kind::Image),
            ),
            (
                "web.container".into(),
                node(
                    "w1",
                    "[Container]\nImage=\"app.image\"\nNetwork=app.network:ip=10.0.0.2\nVolume=db.volume:/data:Z\n",
                    Kind::Container,
                ),
            ),
            (
                "side.container".into(),
                node(
                    "s1",
                    "[Container]\nImage=r/side:1\nNetwork=host\n",
                    Kind::Container,
                ),
            ),
        ])
    }

    #[test]
    fn references_are_read_as_quadlet_reads_them() {
        let n = &stack("v1")["web.container"];
        let to: Vec<&str> = n.refs.iter().map(|r| r.to.as_str()).collect();
        assert_eq!(to, ["app.image", "app.network", "db.volume"]);
        let pod = node(
            "p",
            "[Pod]\nNetwork=app.network\nVolume=db.volume:/x\n",
            Kind::Pod,
        );
        assert_eq!(pod.refs.len(), 2);
        let m = node(
            "m",
            "[Container]\nImage=a\nMount=type=volume,source=db.volume,destination=/d\nPod=stack.pod\n",
            Kind::Container,
        );
        let to: Vec<&str> = m.refs.iter().map(|r| r.to.as_str()).collect();
        assert_eq!(to, ["db.volume", "stack.pod"]);
    }

    #[test]
    fn a_changed_reference_changes_exactly_its_users() {
        let before = effective(&stack("v1")).expect("no cycle");
        let after = effective(&stack("v2")).expect("no cycle");
        let changed: Vec<&String> = before.keys().filter(|k| before[*k] != after[*k]).collect();
        assert_eq!(changed, ["db.volume", "web.container"]);
        // A unit that refers to nothing keeps its own revision.
        assert_eq!(before["side.container"], "s1");
        assert_eq!(users_of("db.volume", &stack("v1")), ["web.container"]);
    }

    #[test]
    fn an_extra_input_counts_like_a_reference() {
        let mut g = stack("v1");
        let before = effective(&g).expect("ok")["side.container"].clone();
        g.get_mut("side.container")
            .expect("node")
            .extra
            .push(ExtraInput {
                name: "file:/etc/side.conf".into(),
                digest: "d1".into(),
            });
        assert_ne!(effective(&g).expect("ok")["side.container"], before);
    }

    #[test]
    fn cycles_and_dangling_references_name_both_units() {
        let mut g = stack("v1");
        g.remove("db.volume");
        let e = effective(&g).expect_err("dangling");
        assert_eq!(
            e,
            GraphError::Dangling {
                from: "web.container".into(),
                to: "db.volume".into(),
                key: "Container.Volume".into()
            }
        );
        let g = BTreeMap::from([
            (
                "a.pod".into(),
                node("a", "[Pod]\nNetwork=b.network\n", Kind::Pod),
            ),
            (
                "b.network".into(),
                Node {
                    own: "b".into(),
                    refs: vec![Reference {
                        key: "Network.Pod".into(),
                        to: "a.pod".into(),
                    }],
                    extra: Vec::new(),
                },
            ),
        ]);
        let e = effective(&g).expect_err("cycle").to_string();
        assert!(e.contains("a.pod") && e.contains("b.network"), "{e}");
    }
}
