//! The argument spec of `data_step`.

use crate::ansible::{Default, Elem, Kind, ModuleSpec, OptionSpec};

/// One step: a database unit whose new text moves it to a new major and a new data volume.
const STEP_OPTIONS: [OptionSpec; 8] = [
    OptionSpec::new(
        "unit",
        Kind::Str,
        "The database's service, as C(db) or C(db.container). Its installed text names the old image and data volume, its staged text (O(stage)) the new ones.",
    )
    .required(),
    OptionSpec::new(
        "method",
        Kind::Str,
        "C(pg_upgrade) (the default: time and disk grow with the files, not the rows) or C(dump) (the old server dumps, the new one restores: works across any majors and rewrites every table and index).",
    )
    .choices(&["pg_upgrade", "dump"])
    .default(Default::Str("pg_upgrade")),
    OptionSpec::new(
        "transfer",
        Kind::Str,
        "With C(pg_upgrade), how the files of the private copy of the old cluster reach the new one: C(link) (hard links: no second copy), C(copy), or C(clone) (reflinks, where the file system has them).\nThe old cluster itself is only ever read, whichever is chosen.",
    )
    .choices(&["link", "copy", "clone"])
    .default(Default::Str("link")),
    OptionSpec::new(
        "data_dir",
        Kind::Path,
        "Where the unit mounts its data volume inside the container; the volume's root is the cluster's data dir.",
    )
    .default(Default::Str("/var/lib/postgresql/data")),
    OptionSpec::new(
        "tables",
        Kind::List(Elem::Str),
        "Tables whose row counts must match between the old and the new cluster, as C(DATABASE.SCHEMA.TABLE).",
    ),
    OptionSpec::new(
        "checks",
        Kind::List(Elem::Str),
        "Queries that must answer true on the new cluster before anything starts on it, as C(DATABASE:SQL), for example C(app:SELECT count(*) > 0 FROM users).",
    ),
    OptionSpec::new(
        "analyze",
        Kind::Str,
        "C(stages) (C(vacuumdb --analyze-in-stages)) or C(once) (C(vacuumdb --analyze-only)), before the new cluster serves.",
    )
    .choices(&["stages", "once"])
    .default(Default::Str("stages")),
    OptionSpec::new(
        "keep",
        Kind::Int,
        "How many of the unit's old data volumes stay once the flow verified the new one (O(action=prune)), the newest first. C(0) removes the way back: a rollback to the old major then starts on an empty volume.",
    )
    .default(Default::Int(1)),
];

const OPTIONS: [OptionSpec; 11] = [
    OptionSpec::new(
        "steps",
        Kind::List(Elem::Dict),
        "The data steps, each with the options above, run in order; the first failure stops the list.",
    )
    .required()
    .suboptions(&STEP_OPTIONS),
    OptionSpec::new(
        "action",
        Kind::Str,
        "C(move) builds each new cluster and installs its unit (the flow's data phase); C(prune) removes the old data volumes earlier moves left beyond each step's O(steps[].keep) (the flow's verify). The volume a unit's installed text mounts is never removed.",
    )
    .choices(&["move", "prune"])
    .default(Default::Str("move")),
    OptionSpec::new(
        "stage",
        Kind::Str,
        "The flow's stage holding each unit's new text; it is installed once its step succeeded.",
    ),
    OptionSpec::new(
        "stop_record",
        Kind::Str,
        "The stop record the stopped services are written to, which the flow's recovery starts again.",
    )
    .default(Default::Str("default")),
    OptionSpec::new(
        "timeout",
        Kind::Int,
        "Seconds each one-off container of a step may run before it is killed.",
    )
    .default(Default::Int(1800))
    .max(crate::ansible::spec::TIMEOUT_MAX),
    OptionSpec::new("run_id", Kind::Str, crate::state::RUN_ID_DOC),
    crate::scope::SCOPE_OPTION,
    crate::scope::SCOPE_USER_OPTION,
    OptionSpec::new("quadlet_dir", Kind::Path, "Where quadlet units live.")
        .default(Default::Str("/etc/containers/systemd")),
    OptionSpec::new("state_dir", Kind::Path, "refit's state dir.")
        .default(Default::Str(crate::state::DEFAULT_STATE_DIR)),
    OptionSpec::new("podman_socket", Kind::Path, "The podman API socket.")
        .default(Default::Str(crate::podman::DEFAULT_SOCKET)),
];

pub static SPEC: ModuleSpec = ModuleSpec {
    name: "data_step",
    short_description: "Move a database to a new major in a new data volume, the old one kept as the way back",
    options: &OPTIONS,
    mutually_exclusive: &[],
    required_one_of: &[],
    required_if: &[],
};
