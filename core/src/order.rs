//! Dependency order: a stable topological sort. Pure code.

use std::collections::{BTreeMap, BTreeSet};

/// Orders `names` so each comes after the names it depends on (`deps`, restricted to `names`).
/// Ties keep the order given. A cycle, which systemd would refuse too, is broken at the first
/// name still pending.
pub fn topo(names: &[String], deps: impl Fn(&str) -> Vec<String>) -> Vec<String> {
    let set: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let mut pending: BTreeMap<usize, BTreeSet<String>> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let d = deps(n)
                .into_iter()
                .filter(|d| d != n && set.contains(d.as_str()))
                .collect();
            (i, d)
        })
        .collect();
    let mut out = Vec::with_capacity(names.len());
    while let Some(next) = pending
        .iter()
        .find(|(_, d)| d.is_empty())
        .map(|(i, _)| *i)
        .or_else(|| pending.keys().next().copied())
    {
        pending.remove(&next);
        let name = &names[next];
        for d in pending.values_mut() {
            d.remove(name);
        }
        out.push(name.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn dependencies_first_ties_in_given_order() {
        let names: Vec<String> = ["app", "worker", "db", "cache"].map(String::from).to_vec();
        let deps = |n: &str| match n {
            "app" => vec!["db".to_string(), "elsewhere".to_string()],
            "worker" => vec!["app".to_string()],
            _ => vec![],
        };
        assert_eq!(super::topo(&names, deps), ["db", "app", "worker", "cache"]);
    }
}
