//! The argument spec of `container_unit`: the one list of its options.
//!
//! The options that describe a unit appear twice: at the top level (with `name`) and as the
//! suboptions of each `units` entry. They are written once, in `UNIT_OPTIONS`.

use crate::ansible::spec::join;
use crate::ansible::{Default, Elem, Kind, ModuleSpec, OptionSpec};

const STATES: &[&str] = &[
    "present",
    "started",
    "restarted",
    "stopped",
    "absent",
    "rolled_back",
];

const UNIT_COUNT: usize = 21;
const RUN_COUNT: usize = 12;

/// What describes one unit.
pub const UNIT_OPTIONS: [OptionSpec; UNIT_COUNT] = [
    OptionSpec::new("name", Kind::Str, "The unit: `hello`, `hello.container`, or a template `worker@`."),
    OptionSpec::new("image", Kind::Str, "The image reference, `Image=`.").aliases(&["image_ref"]),
    OptionSpec::new("exec", Kind::Str, "The command, `Exec=`."),
    OptionSpec::new("volumes", Kind::List(Elem::Str), "`Volume=` entries, SOURCE:DEST[:OPTIONS]."),
    OptionSpec::new("env", Kind::Dict, "Environment variables, `Environment=`."),
    OptionSpec::new(
        "secret_env",
        Kind::Dict,
        "Environment variables whose values are secret. Each value is held in a podman secret (created through the API, named after a keyed hash of the value) and the unit says `Secret=NAME,type=env,target=KEY`, so no value is written into the unit, the generated service or `systemctl show`; a new value is a new revision. Values are masked in every result and diff.",
    )
    .no_log(),
    OptionSpec::new("secrets", Kind::List(Elem::Str), "podman secrets, `Secret=`."),
    OptionSpec::new("network", Kind::Str, "`Network=`, for example `host` or `none`."),
    OptionSpec::new("ports", Kind::List(Elem::Str), "`PublishPort=` entries."),
    OptionSpec::new("health_cmd", Kind::Str, "`HealthCmd=`; when set, convergence waits for `healthy`."),
    OptionSpec::new("health_interval", Kind::Str, "`HealthInterval=`, for example `2s`."),
    OptionSpec::new("labels", Kind::Dict, "Container labels, `Label=`."),
    OptionSpec::new(
        "depends_on",
        Kind::List(Elem::Str),
        "Services this one needs: written as `Requires=` and `After=`, and used to order a `units` list.",
    ),
    OptionSpec::new("unit", Kind::List(Elem::Str), "Extra `[Unit]` entries, `Key=Value`."),
    OptionSpec::new("container", Kind::List(Elem::Str), "Extra `[Container]` entries, `Key=Value`."),
    OptionSpec::new("service", Kind::List(Elem::Str), "Extra `[Service]` entries, `Key=Value`."),
    OptionSpec::new("install", Kind::List(Elem::Str), "Extra `[Install]` entries, `Key=Value`."),
    OptionSpec::new("content", Kind::Str, "The whole unit text, instead of the structured options."),
    OptionSpec::new(
        "socket",
        Kind::Dict,
        "Socket activation: refit writes `NAME.socket` (in `systemd_dir`, enabled through `sockets.target`) with `listen` (a list of `ListenStream=` addresses: `HOST:PORT`, `[IPV6]:PORT`, a port, or an absolute unix socket path) and optionally `backlog`, `reuse_port` and `socket_mode`. systemd holds the listening sockets, and podman passes them to the container (`LISTEN_FDS`, fd 3 on), so a restart of the service for a new image or unit text refuses no connection: clients wait in the backlog. The socket is part of the unit's revision; it is started before the service and replaced (restarted) only when its own text changes, which the result reports as `socket_replaced`. Not for templates.",
    ),
    OptionSpec::new(
        "instances",
        Kind::List(Elem::Str),
        "For a template `NAME@`: the instances to run. They are replaced in batches of `max_parallel`, each converged and healthy before the next; running instances not listed are stopped.",
    ),
    OptionSpec::new("canary", Kind::Int, "For a template: replace only this many instances, and leave the rest on their revision until a run without `canary`."),
];

/// A `units` entry: a unit's options, and a `state` of its own.
pub const UNIT_ENTRY: [OptionSpec; UNIT_COUNT + 1] = join(
    UNIT_OPTIONS,
    [OptionSpec::new(
        "state",
        Kind::Str,
        "Overrides the module's `state` for this unit.",
    )
    .choices(STATES)],
);

/// How a run goes, shared by every unit of it.
const RUN_OPTIONS: [OptionSpec; RUN_COUNT] = [
    OptionSpec::new(
        "units",
        Kind::List(Elem::Dict),
        "Several units in one call, each with the options above; they are converged in dependency order, and a failure rolls back the ones this run changed.",
    )
    .suboptions(&UNIT_ENTRY),
    OptionSpec::new(
        "state",
        Kind::Str,
        "`present` writes the unit and fetches its image but starts nothing; `started` and `restarted` run the desired revision; `rolled_back` returns to the previous recorded revision.",
    )
    .default(Default::Str("started"))
    .choices(STATES),
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
    OptionSpec::new("timeout", Kind::Int, "Seconds to wait for each batch of a unit to converge, and the bound of each image pull.").default(Default::Int(120)),
    OptionSpec::new(
        "min_healthy_time",
        Kind::Int,
        "Milliseconds the new revision must stay active, unrestarted and healthy to count as converged.",
    )
    .default(Default::Int(1000)),
    OptionSpec::new("max_parallel", Kind::Int, "Template instances replaced at once.").default(Default::Int(1)),
    OptionSpec::new(
        "checkpoint",
        Kind::Str,
        "Before changing anything, record every unit as it is under this name (once: a resumed run keeps the first). With `state: rolled_back`, put back exactly what it recorded.",
    ),
    OptionSpec::new("quadlet_dir", Kind::Path, "Where quadlet units live.").default(Default::Str("/etc/containers/systemd")),
    OptionSpec::new("state_dir", Kind::Path, "refit's state dir: revisions and the lock.").default(Default::Str(crate::state::DEFAULT_STATE_DIR)),
    OptionSpec::new("podman_socket", Kind::Path, "The podman API socket.").default(Default::Str(crate::podman::DEFAULT_SOCKET)),
    OptionSpec::new(
        "systemd_dir",
        Kind::Path,
        "Where the boot links of template instances go: `TARGET.wants/NAME@I.service` for each `WantedBy=` of the template.",
    )
    .default(Default::Str("/etc/systemd/system")),
];

/// Every option: the unit's and the run's.
pub static OPTIONS: [OptionSpec; UNIT_COUNT + RUN_COUNT] = join(UNIT_OPTIONS, RUN_OPTIONS);

pub static SPEC: ModuleSpec = ModuleSpec {
    name: "container_unit",
    short_description: "Replace quadlet .container units in place by revision hash and image, and wait until the new revision runs",
    options: &OPTIONS,
    mutually_exclusive: &[
        &["name", "units"],
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
        &["content", "secrets"],
        &["content", "ports"],
        &["content", "labels"],
        &["content", "health_cmd"],
        &["content", "health_interval"],
    ],
    required_one_of: &[&["name", "units"]],
    required_if: &[],
};
