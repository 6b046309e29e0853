//! The argument spec of `flow_state`.

use crate::ansible::{Default, Elem, Kind, ModuleSpec, OptionSpec, RequiredIf};

pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "action",
        Kind::Str,
        "C(begin) runs the preflight checks and takes the run lease.\nC(finish) records the stream and releases the lease.\nC(end) ends a run that failed, after its recovery: with O(recovered), its lease is released; without, it is kept, marked as ended, so nothing else runs on the host and the next run of the same flow and stream resumes it at once.\nC(abandon) releases a lease an interrupted run left; with O(run_id), only that run's own lease.\nC(status) only reads the recorded stream.",
    )
    .default(Default::Str("begin"))
    .choices(&["begin", "finish", "end", "abandon", "status"]),
    OptionSpec::new("flow", Kind::Str, "The flow this run is. Required for C(begin) and C(finish).").choices(&["deploy", "update", "upgrade"]),
    OptionSpec::new("stream", Kind::Str, "The stream this run converges to, for example C(1.1). Required for C(begin) and C(finish)."),
    OptionSpec::new(
        "streams",
        Kind::List(Elem::Str),
        "Known streams, oldest first. An upgrade may only go to the stream after the recorded one.\nWithout this list, the next stream after C(X.Y) is C(X.Y+1).",
    ),
    OptionSpec::new("allow_skip", Kind::Bool, "Let an upgrade skip streams.").default(Default::Bool(false)),
    OptionSpec::new(
        "run_id",
        Kind::Str,
        "Identifies this run. Required for C(finish) and C(end); with C(abandon), releases only this run's lease.\nC(begin) names the run C(FLOW-YYYYMMDDTHHMMSS.ffffff) (UTC) when it is not given, and returns the name in RV(run_id) for the later calls.",
    ),
    OptionSpec::new(
        "services",
        Kind::List(Elem::Str),
        "Services that must be healthy before anything is touched.\nWith O(units) and without this, every unit that is not a template.",
    ),
    OptionSpec::new(
        "images",
        Kind::List(Elem::Str),
        "Images that must be present locally, for offline runs.\nWith O(units), O(offline) and without this, every unit's image.",
    ),
    OptionSpec::new(
        "offline",
        Kind::Bool,
        "Pull nothing: O(pull) is C(never), whatever it says, and every image must be local (or in O(image_archive)) before anything is touched.",
    )
    .default(Default::Bool(false)),
    OptionSpec::new("image_archive", Kind::Path, "A C(podman save -m) archive on the target, loaded before the image check."),
    OptionSpec::new("min_free_mb", Kind::Int, "Free space the image store needs, in MiB.").default(Default::Int(1024)),
    OptionSpec::new(
        "lease_grace",
        Kind::Int,
        "Seconds after the lease's run last showed it was alive before another run of the same flow and stream may take over its lease as an interrupted run's.\nA run is live while any refit module holds the state lock, or when its own last module call let go of it less than this long ago, in this boot, on the boot clock (which no clock step moves); C(begin) then refuses with the run named.\nA lease from an earlier boot, or whose heartbeat is ahead of the clock, counts as interrupted at once.",
    )
    .default(Default::Int(20)),
    OptionSpec::new(
        "ended_runs",
        Kind::List(Elem::Str),
        "With C(begin), runs the caller saw end (refitctl passes the runs whose ansible-playbook it saw exit): a lease of one of them is resumed at once, not waited for. A module at work, holding the state lock, still refuses C(begin).",
    ),
    OptionSpec::new("recovered", Kind::Bool, "With C(end), whether the run's recovery put everything back.").default(Default::Bool(false)),
    OptionSpec::new("image_store", Kind::Path, "Where podman keeps images.").default(Default::Str("/var/lib/containers/storage")),
    crate::scope::SCOPE_OPTION,
    crate::scope::SCOPE_USER_OPTION,
    OptionSpec::new("state_dir", Kind::Path, "refit's state dir, with the stream in use and the run lease.").default(Default::Str(crate::state::DEFAULT_STATE_DIR)),
    OptionSpec::new("podman_socket", Kind::Path, "The podman API socket.").default(Default::Str(crate::podman::DEFAULT_SOCKET)),
    OptionSpec::new(
        "units",
        Kind::List(Elem::Dict),
        "The deployment's units, as `container_unit` `units` entries. With them, `begin` also fetches every image and writes every unit without restarting anything (`container_unit` `state=present`, checkpointed under the flow's name), and judges every migration; when nothing is to do, it finishes the flow in the same call (`finished`).",
    )
    .suboptions(&crate::container_unit::spec::UNIT_ENTRY)
    .entry_rules(crate::container_unit::spec::UNIT_ENTRY_RULES),
    OptionSpec::new(
        "migrations",
        Kind::List(Elem::Dict),
        "The deployment's migrations, as `run_migrations` `migrations` entries, judged on the image each unit is about to run: by stamp, then by check command. Nothing is stopped or migrated here.",
    )
    .suboptions(&crate::migrate::spec::MIGRATION_OPTIONS)
    .entry_rules(crate::migrate::spec::MIGRATION_RULES),
    OptionSpec::new(
        "pull",
        Kind::Str,
        "How `begin` fetches the units' images, as `container_unit` `pull`.\nWithout it, the flow's own: C(missing) for a deploy, C(always) for an update or upgrade, so an update picks up a newer image under the same tag.",
    )
    .choices(&["always", "missing", "never"]),
    OptionSpec::new("auth_file", Kind::Path, crate::container_unit::spec::AUTH_FILE_DOC),
    OptionSpec::new("timeout", Kind::Int, "Seconds a pull or a migration's check command may take.").default(Default::Int(300)).max(crate::ansible::spec::TIMEOUT_MAX),
    // The flow's later calls take these; `begin` judges them, by `container_unit`'s own spec,
    // so a bad value is refused before the host is touched and not in the start phase.
    OptionSpec::new(
        "max_parallel",
        Kind::Int,
        "Template instances the start phase replaces at once, as `container_unit` `max_parallel`: judged here, before anything is touched.",
    )
    .default(Default::Int(1)),
    OptionSpec::new(
        "max_parallel_units",
        Kind::Int,
        "Units the start phase starts at once, as `container_unit` `max_parallel_units`: judged here, before anything is touched.",
    )
    .default(Default::Int(1)),
    OptionSpec::new(
        "migration_checks",
        Kind::Str,
        "When `begin` runs the migrations' check commands, as `run_migrations` `checks`: C(always), or C(when_kept) (only for a migration whose unit keeps running; one whose unit restarts anyway is taken as pending, and runs without a check first).",
    )
    .default(Default::Str("always"))
    .choices(&["always", "when_kept"]),
    OptionSpec::new(
        "min_healthy_time",
        Kind::Int,
        "Milliseconds a new revision must stay healthy in the start phase, as `container_unit` `min_healthy_time`: judged here, before anything is touched.",
    )
    .default(Default::Int(1000)),
    OptionSpec::new(
        "keep_revisions",
        Kind::Int,
        "Revisions kept per unit, as `container_unit` `keep_revisions` (1 to 100): judged here, and kept by the units this call writes.",
    )
    .default(Default::Int(crate::state::KEEP_REVISIONS as i64)),
    OptionSpec::new("quadlet_dir", Kind::Path, "Where quadlet units live, as `container_unit` `quadlet_dir`.").default(Default::Str("/etc/containers/systemd")),
    OptionSpec::new("systemd_dir", Kind::Path, "Where boot links and sockets go, as `container_unit` `systemd_dir`.").default(Default::Str("/etc/systemd/system")),
    OptionSpec::new(
        "target",
        Kind::Str,
        "With C(begin), a systemd target that groups the deployment's services (their units say C(PartOf=) it), for example C(foreman.target): written to O(systemd_dir) when it is missing or differs, and systemd reloaded.\nThe deploy flow passes it, so writing it needs no Python on the host.",
    ),
];

pub static SPEC: ModuleSpec = ModuleSpec {
    name: "flow_state",
    short_description: "Preflight checks, the run lease and the recorded stream of refit's deploy, update and upgrade flows",
    options: OPTIONS,
    mutually_exclusive: &[],
    required_one_of: &[],
    required_if: &[
        RequiredIf {
            option: "action",
            value: "begin",
            requires: &["flow", "stream"],
        },
        RequiredIf {
            option: "action",
            value: "finish",
            requires: &["flow", "stream", "run_id"],
        },
        RequiredIf {
            option: "action",
            value: "end",
            requires: &["run_id"],
        },
    ],
};
