//! The argument spec of `run_migrations`.

use crate::ansible::{Default, Elem, Kind, ModuleSpec, OptionSpec};

pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "unit",
        Kind::Str,
        "The service whose image, volumes, env and network the migration container borrows, read from its quadlet file.",
    ),
    OptionSpec::new(
        "image",
        Kind::Str,
        "An explicit image, instead of a unit's.",
    ),
    OptionSpec::new(
        "volumes",
        Kind::List(Elem::Str),
        "With `image`: volumes, SOURCE:DEST[:OPTIONS].",
    ),
    OptionSpec::new(
        "env",
        Kind::Dict,
        "Environment variables, added to the unit's.",
    ),
    OptionSpec::new(
        "network",
        Kind::Str,
        "With `image`: the network, for example `host` or `none`.",
    ),
    OptionSpec::new(
        "command",
        Kind::List(Elem::Str),
        "The migration command, as a list of words.",
    )
    .required(),
    OptionSpec::new(
        "check_command",
        Kind::List(Elem::Str),
        "A command that exits 0 when nothing is pending; then the migration is skipped, even without a stamp.",
    ),
    OptionSpec::new(
        "timeout",
        Kind::Int,
        "Seconds the migration may run before it is killed.",
    )
    .default(Default::Int(600)),
    OptionSpec::new("quadlet_dir", Kind::Path, "Where quadlet units live.")
        .default(Default::Str("/etc/containers/systemd")),
    OptionSpec::new(
        "state_dir",
        Kind::Path,
        "refit's state dir: migration stamps and the lock.",
    )
    .default(Default::Str("/var/lib/refit")),
    OptionSpec::new("podman_socket", Kind::Path, "The podman API socket.")
        .default(Default::Str("/run/podman/podman.sock")),
];

pub static SPEC: ModuleSpec = ModuleSpec {
    name: "run_migrations",
    short_description: "Run a migration in a one-off container, only when it is pending",
    options: OPTIONS,
    mutually_exclusive: &[&["unit", "image"]],
    required_one_of: &[&["unit", "image"]],
    required_if: &[],
};
