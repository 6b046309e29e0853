//! The user database as the scope needs it: a name or uid to its uid, gid, groups and home.
//! Read from `/etc/passwd` and `/etc/group` (the files, not NSS): refit runs as root on hosts
//! whose service users are local accounts, which is what podman's subuid setup asks for too.

use std::path::{Path, PathBuf};

/// One account, as the scope uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
}

/// Which account to look up.
#[derive(Debug, Clone, Copy)]
pub enum Wanted<'a> {
    Name(&'a str),
    Uid(u32),
}

/// The account of `wanted` in the passwd text, if any.
pub fn find(passwd: &str, wanted: Wanted<'_>) -> Option<Account> {
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        let [name, _, uid, gid, _, home, ..] = f.as_slice() else {
            return None;
        };
        let account = Account {
            name: (*name).to_string(),
            uid: uid.parse().ok()?,
            gid: gid.parse().ok()?,
            home: PathBuf::from(home),
        };
        let hit = match wanted {
            Wanted::Name(n) => account.name == n,
            Wanted::Uid(u) => account.uid == u,
        };
        hit.then_some(account)
    })
}

/// The supplementary groups of `name` in the group text, besides its own `gid`.
pub fn groups_of(group: &str, name: &str, gid: u32) -> Vec<u32> {
    let mut out = vec![gid];
    for line in group.lines() {
        let f: Vec<&str> = line.split(':').collect();
        let [_, _, id, members] = f.as_slice() else {
            continue;
        };
        if let Ok(id) = id.parse::<u32>()
            && members.split(',').any(|m| m == name)
            && !out.contains(&id)
        {
            out.push(id);
        }
    }
    out
}

/// Whether the subordinate id file (`/etc/subuid`, `/etc/subgid`) gives `account` a range, by
/// name or by uid, as shadow-utils' newuidmap matches them.
pub fn has_subids(text: &str, account: &Account) -> bool {
    text.lines().any(|line| {
        let f: Vec<&str> = line.trim().split(':').collect();
        let [owner, _, count] = f.as_slice() else {
            return false;
        };
        (*owner == account.name || owner.parse::<u32>().ok() == Some(account.uid))
            && count.parse::<u64>().is_ok_and(|c| c > 0)
    })
}

/// A file of the user database; a missing one reads as empty, so the lookup names the user.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\napp:x:1001:1001::/home/app:/bin/sh\nbad:x:nope:1::/x:/bin/sh\n";

    #[test]
    fn finds_by_name_and_by_uid_and_skips_broken_lines() {
        let app = find(PASSWD, Wanted::Name("app")).expect("app");
        assert_eq!(
            (app.uid, app.gid, app.home.as_path()),
            (1001, 1001, Path::new("/home/app"))
        );
        assert_eq!(find(PASSWD, Wanted::Uid(1001)), Some(app));
        assert_eq!(find(PASSWD, Wanted::Name("bad")), None);
        assert_eq!(find(PASSWD, Wanted::Name("nobody")), None);
    }

    #[test]
    fn groups_are_the_own_gid_and_memberships() {
        let group = "app:x:1001:\nsystemd-journal:x:999:app,other\nwheel:x:10:other\n";
        assert_eq!(groups_of(group, "app", 1001), vec![1001, 999]);
    }

    #[test]
    fn subids_match_by_name_or_uid_and_need_a_range() {
        let app = find(PASSWD, Wanted::Name("app")).expect("app");
        assert!(has_subids("app:200000:65536\n", &app));
        assert!(has_subids("1001:200000:65536\n", &app));
        assert!(!has_subids("app:200000:0\n", &app));
        assert!(!has_subids("other:200000:65536\n", &app));
    }
}
