//! The argument spec of `run_migrations`.

use crate::ansible::spec::join;
use crate::ansible::{Default, Elem, Kind, ModuleSpec, OptionSpec, Rules};

const ONE: usize = 9;
const RUN: usize = 18;

/// A migration's `backup`, run in a one-off container before the migration.
const BACKUP_OPTIONS: [OptionSpec; 9] = [
    OptionSpec::new("image", Kind::Str, "The image the backup and restore commands run in, for example the database's.").required(),
    OptionSpec::new("volumes", Kind::List(Elem::Str), "Volumes as C(SOURCE:DEST[:OPTIONS]), beside the backup's own directory at C(/backup)."),
    OptionSpec::new("network", Kind::Str, "The network, for example C(host) to reach a database on loopback."),
    OptionSpec::new("env", Kind::Dict, "Environment variables of the backup and restore containers; only their names are recorded."),
    OptionSpec::new("secret_env", Kind::Dict, "Environment variables whose values are secret (a database password), given to the backup and restore containers like O(migrations[].backup.env).\nMasked in every result and never written to a file: only their names are recorded, and O(restore) takes the values from its own call.").no_log(),
    OptionSpec::new("command", Kind::List(Elem::Str), "Writes the backup into C(/backup), a new directory under the state dir, for example C([pg_dump, -Fc, -f, /backup/db.dump]).\nA failure stops the run before the migration.").required(),
    OptionSpec::new("restore_command", Kind::List(Elem::Str), "Puts the data in C(/backup) back, run by O(restore).").required(),
    OptionSpec::new("stream", Kind::Str, "The stream the backup is kept under; each stream keeps its own newest, as many as C(keep) says.").default(Default::Str("default")),
    OptionSpec::new("keep", Kind::Int, "How many backups of the stream to keep; one a failed run may still restore is never pruned.").default(Default::Int(3)),
];

/// One migration: at the top level, or an entry of `migrations`.
pub const MIGRATION_OPTIONS: [OptionSpec; ONE] = [
    OptionSpec::new(
        "unit",
        Kind::Str,
        "The service whose quadlet unit the container borrows from, as C(app) or C(app.container).",
    ),
    OptionSpec::new(
        "image",
        Kind::Str,
        "An explicit image, instead of a unit's.",
    ),
    OptionSpec::new(
        "volumes",
        Kind::List(Elem::Str),
        "With O(image), volumes as C(SOURCE:DEST[:OPTIONS]).",
    ),
    OptionSpec::new(
        "env",
        Kind::Dict,
        "Environment variables, added to the unit's.",
    ),
    OptionSpec::new(
        "network",
        Kind::Str,
        "With O(image), the network, for example C(host) or C(none).",
    ),
    OptionSpec::new(
        "secret_env",
        Kind::Dict,
        "Environment variables whose values are secret, added to the unit's; masked in every result, never written to a file.",
    )
    .no_log(),
    OptionSpec::new(
        "command",
        Kind::List(Elem::Str),
        "The migration command, as a list of words.",
    ),
    OptionSpec::new(
        "check_command",
        Kind::List(Elem::Str),
        "A command that exits 0 when nothing is pending.",
    ),
    OptionSpec::new(
        "backup",
        Kind::Dict,
        "A backup of the data the migration changes, taken when it is pending, after O(stop_first) stopped its services and before it runs.\nRecorded under the state dir's C(backups/STREAM/), and listed for O(restore) under O(stop_record) until the flow finishes.",
    )
    .suboptions(&BACKUP_OPTIONS),
];

const RUN_OPTIONS: [OptionSpec; RUN] = [
    OptionSpec::new(
        "migrations",
        Kind::List(Elem::Dict),
        "Several migrations in one call, each with the options of a single one (O(unit), O(command), ...), run in order.\nThe first failure stops the list; the migrations before it keep their stamps.",
    )
    .suboptions(&MIGRATION_OPTIONS)
    .entry_rules(MIGRATION_RULES),
    OptionSpec::new(
        "stop_first",
        Kind::Bool,
        "Before a pending migration of a O(unit), stop that service and what depends on it (what requires it, binds to it or wants it, and would start it again; no target), in reverse dependency order.\nThey are recorded in the stop record O(stop_record), so C(stop_services state=restored) brings back exactly what ran.\nWith O(stage), the other units of the stage that run the same image as the migration's unit (in O(images); a template's O(instances)) stop just before it, all at once, and start again all at once as soon as it serves: they run the code the migration is for, which must not start on the old schema, and their old release would run on the new one while it migrates. Left alone: a unit with a migration of its own in the call, the units of an image two migrations of the call share, and a unit ordered after another migration's service.\nNothing is stopped when nothing is pending.",
    )
    .default(Default::Bool(false)),
    OptionSpec::new(
        "start_after",
        Kind::Bool,
        "With O(stop_first), start what a pending migration stopped as soon as it has run, in dependency order and each one waited for (the units of its image all at once, once it serves), before the next migration stops anything.\nEach service is then down for its own migration and its own start, not for the other migrations. The flows set it; the stop record stays until the flow finishes, so a recovery still knows what ran.",
    )
    .default(Default::Bool(false)),
    OptionSpec::new(
        "images",
        Kind::Dict,
        "The image each unit is about to run, by unit name.\nA migration of that unit runs it instead of the C(Image=) of the file on disk.\nThe flows pass it, so that check mode judges the image an update brings.",
    ),
    OptionSpec::new(
        "checked_pending",
        Kind::Dict,
        "Migrations whose check command already found work earlier in this run, as C(SOURCE: IMAGE_ID) (the O(migrations[].unit), or else its image).\nFor that image the check is not run again, only the migration. The flows pass what C(flow_state action=begin) judged (its C(migrations) with C(checked)).",
    ),
    OptionSpec::new(
        "checks",
        Kind::Str,
        "When a migration's O(migrations[].check_command) runs.\nC(always): before anything stops, for every migration that has one; a migration it finds nothing pending for stops nothing.\nC(when_kept): only for a migration whose unit keeps running in this call's O(stage). A unit whose new text or image is staged restarts anyway, so it is stopped for its migration without asking first: the migration then costs one start of the application instead of two (the check's and the migration's), and with nothing pending the migration finds nothing to do. The upgrade and deploy flows pass C(when_kept), the update flow C(always).",
    )
    .default(Default::Str("always"))
    .choices(&["always", "when_kept"]),
    OptionSpec::new(
        "instances",
        Kind::Dict,
        "The instances of each template unit of O(images), as C(worker@: [1, 2]): a pending migration of a flow stops and starts again the units of its stage that run its unit's image (see O(stop_first)), and a template's are its instances. The flows pass it.",
    ),
    OptionSpec::new(
        "restore",
        Kind::Bool,
        "Instead of migrating, restore the backups the unfinished run O(stop_record) took, newest first, so the previous release starts on its own schema; the flow's recovery does this before the previous images start.\nRestores nothing when that run took none, or finished.",
    )
    .default(Default::Bool(false)),
    OptionSpec::new("stop_record", Kind::Str, "The stop record O(stop_first) writes to.").default(Default::Str("default")),
    OptionSpec::new(
        "stage",
        Kind::Str,
        "The stage a flow's preflight wrote (C(refit.containers.container_unit) O(stage), named by its checkpoint), where each unit's new text waits until its restart.\nA migration of a O(unit) whose text is staged runs with that text's env, volumes and secrets, and once it succeeded and is stamped, the text is installed into O(quadlet_dir) and systemd reloaded, before O(start_after) starts the service: a boot before then starts the old text on the old schema, and one after it the new text on the new schema. A new image the preflight held off the tag the unit names (a z-stream under one tag) is the one the migration runs, by ID, and its tag moves onto it with the install. Reported in RV(installed).\nThe flows set it.",
    ),
    OptionSpec::new("timeout", Kind::Int, "Seconds the migration may run before it is killed and removed.").default(Default::Int(600)).max(crate::ansible::spec::TIMEOUT_MAX),
    OptionSpec::new(
        "min_healthy_time",
        Kind::Int,
        "With O(start_after), milliseconds each service started again must stay active and healthy before the next migration stops anything and the call returns, as C(refit.containers.container_unit) waits for a new revision.",
    )
    .default(Default::Int(super::DEFAULT_MIN_HEALTHY_TIME)),
    OptionSpec::new("quadlet_dir", Kind::Path, "Where quadlet units live.").default(Default::Str("/etc/containers/systemd")),
    OptionSpec::new("run_id", Kind::Str, crate::state::RUN_ID_DOC),
    crate::scope::SCOPE_OPTION,
    crate::scope::SCOPE_USER_OPTION,
    OptionSpec::new("state_dir", Kind::Path, "refit's state dir, with the migration stamps and the lock.").default(Default::Str(crate::state::DEFAULT_STATE_DIR)),
    OptionSpec::new("podman_socket", Kind::Path, "The podman API socket.").default(Default::Str(crate::podman::DEFAULT_SOCKET)),
];

pub static OPTIONS: [OptionSpec; ONE + RUN] = join(MIGRATION_OPTIONS, RUN_OPTIONS);

const MIGRATION_EXCLUSIVE: [&[&str]; 3] = [
    &["unit", "image"],
    // A unit's volumes and network come from its file; these two would be ignored.
    &["unit", "volumes"],
    &["unit", "network"],
];

const EXCLUSIVE: [&[&str]; 5] = join(
    MIGRATION_EXCLUSIVE,
    [&["migrations", "unit"], &["migrations", "image"]],
);

/// What holds inside each `migrations` entry: one migration, for a unit or an image.
pub const MIGRATION_RULES: Rules = Rules {
    mutually_exclusive: &MIGRATION_EXCLUSIVE,
    required_one_of: &[&["unit", "image"]],
    required_if: &[],
};

pub static SPEC: ModuleSpec = ModuleSpec {
    name: "run_migrations",
    short_description: "Run migrations in one-off containers, only when they are pending",
    options: &OPTIONS,
    mutually_exclusive: &EXCLUSIVE,
    required_one_of: &[&["unit", "image", "migrations"]],
    required_if: &[],
};
