use super::*;
use serde_json::json;

fn app() -> Scope {
    Scope::User(UserScope {
        name: "app".into(),
        uid: 1001,
        gid: 1001,
        groups: vec![1001],
        home: "/home/app".into(),
        runtime_dir: "/run/user/1001".into(),
    })
}

fn map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object"),
    }
}

#[test]
fn places_the_caller_did_not_give_are_the_scopes() {
    let raw = map(json!({"quadlet_dir": "/srv/q"}));
    let mut params = map(json!({
        "quadlet_dir": "/srv/q", "state_dir": "/var/lib/refit",
        "podman_socket": "/run/podman/podman.sock", "name": "x"}));
    app().fill_places(&raw, &mut params);
    assert_eq!(
        params,
        map(json!({
            "quadlet_dir": "/srv/q", "state_dir": "/home/app/.local/state/refit",
            "podman_socket": "/run/user/1001/podman/podman.sock", "name": "x"}))
    );
    // A module without the option does not get it.
    assert!(!params.contains_key("systemd_dir"));
}

#[test]
fn the_system_scope_keeps_roots_places() {
    let mut params = map(json!({"quadlet_dir": "/x", "systemd_dir": "/y"}));
    Scope::System.fill_places(&Map::new(), &mut params);
    assert_eq!(
        params,
        map(
            json!({"quadlet_dir": "/etc/containers/systemd", "systemd_dir": "/etc/systemd/system"})
        )
    );
}

#[test]
fn an_empty_place_is_left_to_the_scope_and_other_empty_values_stay() {
    let mut raw = map(json!({"state_dir": "", "run_id": "", "quadlet_dir": "/q"}));
    Scope::drop_empty_places(&mut raw);
    assert_eq!(raw, map(json!({"run_id": "", "quadlet_dir": "/q"})));
}

#[test]
fn systemctl_of_a_user_scope_talks_to_its_manager() {
    let cmd = app().command("systemctl");
    let args: Vec<_> = cmd.get_args().collect();
    assert_eq!(args, ["--user"]);
    let env: Vec<_> = cmd.get_envs().collect();
    assert!(env.contains(&(
        std::ffi::OsStr::new("XDG_RUNTIME_DIR"),
        Some(std::ffi::OsStr::new("/run/user/1001"))
    )));
    assert_eq!(Scope::System.command("systemctl").get_args().count(), 0);
}

#[test]
fn a_system_scope_is_the_default_and_root_must_name_its_user() {
    assert_eq!(
        Scope::of_params(&Map::new()).expect("system"),
        Scope::System
    );
    if rustix::process::geteuid().is_root() {
        let err = Scope::of_params(&map(json!({"scope": "user"}))).expect_err("no user");
        assert!(
            err.to_string().starts_with("scope_user is required"),
            "{err}"
        );
        let err = Scope::of_params(&map(json!({"scope": "user", "scope_user": "root"})))
            .expect_err("root");
        assert!(err.to_string().contains("scope: system"), "{err}");
    }
    let err = Scope::of_params(&map(
        json!({"scope": "user", "scope_user": "no-such-user-x"}),
    ))
    .expect_err("unknown");
    assert!(
        err.to_string()
            .starts_with("scope_user: no user \"no-such-user-x\""),
        "{err}"
    );
}
