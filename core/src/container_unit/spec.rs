//! The argument spec of `container_unit`: the one list of its options.

use crate::ansible::{Default, Elem, Kind, ModuleSpec, OptionSpec};

const STATES: &[&str] = &[
    "present",
    "started",
    "restarted",
    "stopped",
    "absent",
    "rolled_back",
];

pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("name", Kind::Str, "The unit: `hello` or `hello.container`.").required(),
    OptionSpec::new(
        "state",
        Kind::Str,
        "`present` writes the unit and fetches its image but starts nothing; `started` and `restarted` run the desired revision; `rolled_back` returns to the previous recorded revision.",
    )
    .default(Default::Str("started"))
    .choices(STATES),
    OptionSpec::new("image", Kind::Str, "The image reference, `Image=`.").aliases(&["image_ref"]),
    OptionSpec::new("exec", Kind::Str, "The command, `Exec=`."),
    OptionSpec::new("volumes", Kind::List(Elem::Str), "`Volume=` entries, SOURCE:DEST[:OPTIONS]."),
    OptionSpec::new("env", Kind::Dict, "Environment variables, `Environment=`."),
    OptionSpec::new(
        "secret_env",
        Kind::Dict,
        "Environment variables whose values are secret: written like `env`, masked in every result and diff.",
    )
    .no_log(),
    OptionSpec::new("secrets", Kind::List(Elem::Str), "podman secrets, `Secret=`."),
    OptionSpec::new("network", Kind::Str, "`Network=`, for example `host` or `none`."),
    OptionSpec::new("ports", Kind::List(Elem::Str), "`PublishPort=` entries."),
    OptionSpec::new("health_cmd", Kind::Str, "`HealthCmd=`; when set, convergence waits for `healthy`."),
    OptionSpec::new("health_interval", Kind::Str, "`HealthInterval=`, for example `2s`."),
    OptionSpec::new("labels", Kind::Dict, "Container labels, `Label=`."),
    OptionSpec::new("unit", Kind::List(Elem::Str), "Extra `[Unit]` entries, `Key=Value`."),
    OptionSpec::new("container", Kind::List(Elem::Str), "Extra `[Container]` entries, `Key=Value`."),
    OptionSpec::new("service", Kind::List(Elem::Str), "Extra `[Service]` entries, `Key=Value`."),
    OptionSpec::new("install", Kind::List(Elem::Str), "Extra `[Install]` entries, `Key=Value`."),
    OptionSpec::new("content", Kind::Str, "The whole unit text, instead of the structured options."),
    OptionSpec::new(
        "pull",
        Kind::Str,
        "`always` pulls before anything stops; `missing` pulls only an image that is not local; `never` is disconnected mode: a missing image fails before anything is touched.",
    )
    .default(Default::Str("missing"))
    .choices(&["always", "missing", "never"]),
    OptionSpec::new(
        "rollback",
        Kind::Bool,
        "When the new revision fails to converge, restore the previous unit text and image and start it again.",
    )
    .default(Default::Bool(true)),
    OptionSpec::new("timeout", Kind::Int, "Seconds to wait for the new revision to converge.").default(Default::Int(120)),
    OptionSpec::new(
        "min_healthy_time",
        Kind::Int,
        "Milliseconds the new revision must stay active, unrestarted and healthy to count as converged.",
    )
    .default(Default::Int(1000)),
    OptionSpec::new("quadlet_dir", Kind::Path, "Where quadlet units live.").default(Default::Str("/etc/containers/systemd")),
    OptionSpec::new("state_dir", Kind::Path, "refit's state dir: revisions and the lock.").default(Default::Str("/var/lib/refit")),
    OptionSpec::new("podman_socket", Kind::Path, "The podman API socket.").default(Default::Str("/run/podman/podman.sock")),
];

pub static SPEC: ModuleSpec = ModuleSpec {
    name: "container_unit",
    short_description: "Replace a quadlet .container unit in place by revision hash and image, and wait until the new revision runs",
    options: OPTIONS,
    mutually_exclusive: &[
        &["content", "image"],
        &["content", "exec"],
        &["content", "volumes"],
        &["content", "env"],
        &["content", "secret_env"],
        &["content", "network"],
        &["content", "unit"],
        &["content", "service"],
        &["content", "install"],
        &["content", "container"],
    ],
    required_one_of: &[],
    required_if: &[],
};
