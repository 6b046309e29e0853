//! The argument spec of `container_unit`: the one list of its options.
//!
//! The options that describe a unit appear twice: at the top level (with `name`) and as the
//! suboptions of each `units` entry. They are written once, in `UNIT_OPTIONS`.

use crate::ansible::spec::join;
use crate::ansible::{Default, Elem, Kind, ModuleSpec, OptionSpec, Rules};

const STATES: &[&str] = &[
    "present",
    "started",
    "restarted",
    "stopped",
    "absent",
    "rolled_back",
];

const UNIT_COUNT: usize = 23;
const RUN_COUNT: usize = 20;

/// What describes one unit.
pub const UNIT_OPTIONS: [OptionSpec; UNIT_COUNT] = [
    OptionSpec::new("name", Kind::Str, "The unit, as C(hello), C(hello.container), a template C(worker@), or an instance file C(report@daily), which holds a unit of its own (no template); or a unit of another quadlet kind, named with its suffix: C(app.network), C(data.volume), C(stack.pod), C(app.image), C(app.build), given as O(content). Units refer to each other (C(Image=app.image), C(Pod=), C(Network=), C(Volume=data.volume:/data)), and a unit's revision covers the revisions of what it refers to. C(.kube) and C(.artifact) units are refused. Give O(name) or O(units)."),
    OptionSpec::new("image", Kind::Str, "The image reference, C(Image=).").aliases(&["image_ref"]),
    OptionSpec::new("exec", Kind::Str, "The command, C(Exec=)."),
    OptionSpec::new("volumes", Kind::List(Elem::Str), "C(Volume=) entries, C(SOURCE:DEST[:OPTIONS])."),
    OptionSpec::new("env", Kind::Dict, "Environment variables, C(Environment=). Sorted, so their order does not change the revision."),
    OptionSpec::new(
        "secret_env",
        Kind::Dict,
        "Environment variables whose values are secret. Each value is held in a podman secret, created through the podman API and named after a keyed hash of the value, and the unit says C(Secret=NAME,type=env,target=KEY); no value is written into the unit file, the generated service or C(systemctl show).\nA new value is a new revision, so rotating one secret restarts only the units that use it. A secret is removed once no recorded revision, checkpoint, stage or unit file names it.\nValues are masked in every result and diff, and so is any value this unit held as a secret before.",
    )
    .no_log(),
    OptionSpec::new("secrets", Kind::List(Elem::Str), "podman secrets, C(Secret=)."),
    OptionSpec::new("network", Kind::Str, "C(Network=), for example C(host) or C(none)."),
    OptionSpec::new("ports", Kind::List(Elem::Str), "C(PublishPort=) entries."),
    OptionSpec::new("health_cmd", Kind::Str, "C(HealthCmd=). When set, convergence waits for the container to be C(healthy), and an C(unhealthy) one fails at once."),
    OptionSpec::new("health_interval", Kind::Str, "C(HealthInterval=), for example C(2s)."),
    OptionSpec::new("labels", Kind::Dict, "Container labels, C(Label=)."),
    OptionSpec::new(
        "depends_on",
        Kind::List(Elem::Str),
        "Services this one needs, written as C(Wants=) and C(After=) in C([Unit]), and used to order a O(units) list. Not C(Requires=): systemd restarts a dependent with its dependency along C(Requires=) (and C(BindsTo=), C(PartOf=)), so an update of one service would restart every unchanged service that needs it. Stop a stack as one through a target its units are C(PartOf=).",
    ),
    OptionSpec::new("unit", Kind::List(Elem::Str), "Extra C([Unit]) entries, each C(Key=Value)."),
    OptionSpec::new("container", Kind::List(Elem::Str), "Extra C([Container]) entries, each C(Key=Value)."),
    OptionSpec::new("service", Kind::List(Elem::Str), "Extra C([Service]) entries, each C(Key=Value)."),
    OptionSpec::new("install", Kind::List(Elem::Str), "Extra C([Install]) entries, each C(Key=Value)."),
    OptionSpec::new("content", Kind::Str, "The whole unit text, instead of the structured options. A C(.container) must set C(Image=) in C([Container]): an image reference, or an C(.image) or C(.build) unit whose image it runs. Units of the other kinds are given as O(content) only.\nRefused together with any structured option it would make refit ignore (O(image), O(exec), O(volumes), O(env), O(secret_env), O(secrets), O(network), O(ports), O(labels), O(health_cmd), O(health_interval), O(unit), O(container), O(service), O(install)), also inside O(units) entries."),
    OptionSpec::new(
        "socket",
        Kind::Dict,
        "Socket activation: refit writes `NAME.socket` (in `systemd_dir`, enabled through `sockets.target`) with `listen` (a list of `ListenStream=` addresses: `HOST:PORT`, `[IPV6]:PORT`, a port, or an absolute unix socket path) and optionally `backlog`, `reuse_port` and `socket_mode`. systemd holds the listening sockets, and podman passes them to the container (`LISTEN_FDS`, fd 3 on), so a restart of the service for a new image or unit text refuses no connection: clients wait in the backlog. The socket is part of the unit's revision; it is started before the service and replaced (restarted) only when its own text changes, which the result reports as `socket_replaced`. Not for templates.",
    ),
    OptionSpec::new(
        "restart_on_change",
        Kind::List(Elem::Str),
        "Host files the container reads, such as bind-mounted config files and certificates (C(/etc/foreman/settings.yaml)), given as absolute paths. A file modified after the unit's container started means the service runs an old version of it: the unit is restarted, with the reason C(file_changed), which check mode reports first. Only the units that name a file restart when it changes. A file that is not there fails the run before anything changes. Podman secrets the unit names in C(Secret=) that refit did not create need no entry: one set after the container started restarts the units that name it, with the reason C(secret_changed). A run that converges keeps the version of each such file and secret that ran (a root-only copy in the state dir; a podman secret C(refit-kept-DIGEST)); when the restart for a changed one fails, refit puts that version back and starts the unit on it again.",
    ),
    OptionSpec::new(
        "instances",
        Kind::List(Elem::Str),
        "For a template C(NAME@), the instances to run, for example C([1, 2, 3]).\nThey are replaced in batches of O(max_parallel), each converged and healthy for O(min_healthy_time) before the next batch starts. A batch that fails stops the rollout and, with O(rollback=true), returns the instances replaced so far to the previous revision.\nRunning instances that are not listed are stopped.",
    ),
    OptionSpec::new("canary", Kind::Int, "For a template, replace only this many instances and leave the rest on their revision, until a run without it."),
    OptionSpec::new(
        "rollback_to",
        Kind::Str,
        "With O(state=rolled_back), the kept revision to go back to instead of the previous one: its id as RV(refit.containers.container_unit#module:history[].id) gives it, or any prefix of it that names one kept revision only. An unknown or ambiguous prefix is refused, naming the kept ids.\nThe revision left stays kept, so a later O(rollback_to) can go forward to it again.",
    ),
];

/// `content` is the whole unit text, so no structured option may come with it.
const CONTENT_EXCLUSIVE: [&[&str]; 15] = [
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
];

const EXCLUSIVE: [&[&str]; 16] = join([&["name", "units"]], CONTENT_EXCLUSIVE);

/// What holds inside each `units` entry, as at the top level.
pub const UNIT_ENTRY_RULES: Rules = Rules {
    mutually_exclusive: &CONTENT_EXCLUSIVE,
    ..Rules::NONE
};

/// A `units` entry: a unit's options, and a `state` of its own.
pub const UNIT_ENTRY: [OptionSpec; UNIT_COUNT + 1] = join(
    UNIT_OPTIONS,
    [OptionSpec::new(
        "state",
        Kind::Str,
        "Overrides the module's O(state) for this unit.",
    )
    .choices(STATES)],
);

/// `auth_file`, the same for container_unit and flow_state.
pub const AUTH_FILE_DOC: &str = "The registry credentials on the target host, an auth.json as C(podman login --authfile FILE REGISTRY) writes it. Pulls send its logins to podman (for the registry and its C(registries.conf) mirrors alike), and registry digest lookups (check mode, C(pull: always)) use them.\nWithout it, podman's own lookup order: C(REGISTRY_AUTH_FILE), C(/run/containers/0/auth.json), C(~/.config/containers/auth.json), C(~/.docker/config.json).\nThe credentials never appear in a result, a log or an error; the file must exist and parse before anything is touched.";

/// How a run goes, shared by every unit of it.
const RUN_OPTIONS: [OptionSpec; RUN_COUNT] = [
    OptionSpec::new(
        "units",
        Kind::List(Elem::Dict),
        "Several units in one call, each with the options of a single unit (O(name), O(image), ...).\nThey are observed and their images fetched first, then converged one by one in dependency order (O(units[].depends_on) and the C([Unit]) C(After=), C(Requires=)). A unit that fails is rolled back, and so are the units this run changed before it.",
    )
    .suboptions(&UNIT_ENTRY)
    .entry_rules(UNIT_ENTRY_RULES),
    OptionSpec::new(
        "state",
        Kind::Str,
        "C(present) writes the unit and fetches its image, starts nothing, and reports RV(restart_needed).\nC(started) runs the desired revision, restarting only when the unit or its image changed.\nC(restarted) always restarts.\nC(stopped) stops the service; C(absent) also removes the unit file.\nC(rolled_back) returns to the previous revision recorded in O(state_dir), with its image ID.",
    )
    .default(Default::Str("started"))
    .choices(STATES),
    OptionSpec::new(
        "pull",
        Kind::Str,
        "C(always) pulls before anything stops; C(missing) pulls only an image that is not local.\nC(never) is disconnected mode; a missing image fails before anything is touched.",
    )
    .default(Default::Str("missing"))
    .choices(&["always", "missing", "never"]),
    OptionSpec::new("auth_file", Kind::Path, AUTH_FILE_DOC),
    OptionSpec::new(
        "rollback",
        Kind::Bool,
        "Restore the previous revision when the new one does not converge.\nA flow's recovery (O(state=rolled_back) with O(checkpoint)) rolls nothing back: each unit goes back to its checkpoint on its own, one that does not converge is left as it is and reported, and the others still go back.",
    )
    .default(Default::Bool(true)),
    OptionSpec::new("timeout", Kind::Int, "Seconds to wait for each batch of a unit to converge, and the bound of each image pull.").default(Default::Int(120)).max(crate::ansible::spec::TIMEOUT_MAX),
    OptionSpec::new(
        "min_healthy_time",
        Kind::Int,
        "Milliseconds the new revision must stay active, unrestarted and healthy to count as converged.",
    )
    .default(Default::Int(1000)),
    OptionSpec::new("max_parallel", Kind::Int, "Template instances replaced at once.").default(Default::Int(1)),
    OptionSpec::new(
        "max_parallel_units",
        Kind::Int,
        "With O(units), units started and health-gated at once. A unit starts once every unit it is ordered after (C(After=), C(Requires=), C(Wants=), C(PartOf=) on their services) serves (runs the new revision, healthy); their O(min_healthy_time) hold goes on beside its start, and a failure in it stops the walk and rolls back what started. Units that do not depend on each other start together. A unit in its hold counts against this bound. A template's instances still go in batches of O(max_parallel).",
    )
    .default(Default::Int(1)),
    OptionSpec::new(
        "checkpoint",
        Kind::Str,
        "Before changing anything, record every unit as it is (text, image ID, whether it ran) under this name in O(state_dir). The first run that names it writes it; a resumed run keeps the original.\nWith O(state=rolled_back), put back exactly what it recorded, and remove it. A unit that did not exist is removed; one that did not run gets its text and image back, and no start.",
    ),
    OptionSpec::new(
        "stage",
        Kind::Bool,
        "With O(state=present) and O(checkpoint): write each new unit text to the stage of that name in O(state_dir) (C(staged/NAME.json)) instead of the quadlet dir. quadlet still judges every new text, every image is still fetched, and check mode and the diff show the same change; but nothing quadlet or systemd loads changes, so whatever starts a unit before its text is installed (a boot, a crash restart, an operator) starts the text it ran before.\nA new image pulled under the tag the unit file on disk already names (a z-stream under one tag) is held off that tag the same way: right after the pull the tag goes back to the image the unit ran, and the stage records the new one, which keeps the tag C(localhost/refit-keep/NAME-HASH:staged) meanwhile.\nThe stage is written whole: it holds exactly the units this call would write or hold. O(state=started) with the same O(checkpoint) moves each held image onto its tag just before its unit's restart, and writes each text then too; C(refit.containers.run_migrations) with the same O(checkpoint) name as its C(stage) runs a migrated unit's held image, and installs its text and image after its migration. O(state=rolled_back) to the checkpoint, and the flow's finish, remove the stage.\nThe flows set it.",
    )
    .default(Default::Bool(false)),
    OptionSpec::new(
        "keep_revisions",
        Kind::Int,
        "How many revisions that converged are kept per unit, to roll back to (1 to 100). Their images stay tagged C(localhost/refit-keep/NAME-HASH:img-ID), so C(podman image prune) keeps them; C(podman image prune -a) removes every image no container uses, tagged or not, and nothing but a container protects from it.\nAfter a run that converged, an image refit pulled for a unit and that no kept revision runs, no container (running or not) uses and no other tag names is removed, reported in RV(images_pruned).",
    )
    .default(Default::Int(crate::state::KEEP_REVISIONS as i64)),
    OptionSpec::new(
        "history",
        Kind::Bool,
        "Report each unit's kept revisions in RV(history), with whether each one's image is still local. Reads only; C(refitctl history) runs it in check mode.",
    )
    .default(Default::Bool(false)),
    OptionSpec::new("quadlet_dir", Kind::Path, "Where quadlet units live.").default(Default::Str("/etc/containers/systemd")),
    OptionSpec::new("run_id", Kind::Str, crate::state::RUN_ID_DOC),
    crate::scope::SCOPE_OPTION,
    crate::scope::SCOPE_USER_OPTION,
    OptionSpec::new("state_dir", Kind::Path, "refit's state dir, with the recent revisions of each unit and the lock.").default(Default::Str(crate::state::DEFAULT_STATE_DIR)),
    OptionSpec::new("podman_socket", Kind::Path, "The podman API socket.").default(Default::Str(crate::podman::DEFAULT_SOCKET)),
    OptionSpec::new(
        "systemd_dir",
        Kind::Path,
        "Where the boot links of template instances go. quadlet gives a template no C(.wants) link, so for each C(WantedBy=) (C(RequiredBy=)) target in the template's C([Install]), every listed instance gets C(TARGET.wants/NAME@I.service) here, and instances no longer listed lose theirs, so exactly the listed instances come back at boot.",
    )
    .default(Default::Str("/etc/systemd/system")),
];

/// Every option: the unit's and the run's.
pub static OPTIONS: [OptionSpec; UNIT_COUNT + RUN_COUNT] = join(UNIT_OPTIONS, RUN_OPTIONS);

pub static SPEC: ModuleSpec = ModuleSpec {
    name: "container_unit",
    short_description: "Replace quadlet units of every kind in place by revision hash and image, and wait until the new revision runs",
    options: &OPTIONS,
    mutually_exclusive: &EXCLUSIVE,
    required_one_of: &[&["name", "units"]],
    required_if: &[],
};
