//! The argument spec of `stop_services`.

use crate::ansible::{Default, Elem, Kind, ModuleSpec, OptionSpec};

pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "services",
        Kind::List(Elem::Str),
        "Units to stop: `.service` or `.target`, template instances included; a name without a suffix is a `.service`. Not needed for `restored`.",
    )
    .aliases(&["units"]),
    OptionSpec::new(
        "state",
        Kind::Str,
        "`stopped` stops the set and records which were active; `restored` starts exactly the recorded set again, in dependency order; `started` starts the given units.",
    )
    .default(Default::Str("stopped"))
    .choices(&["stopped", "restored", "started"]),
    OptionSpec::new(
        "dependents",
        Kind::Bool,
        "Also stop the units that `Requires`, `BindsTo` or are `PartOf` these. Without it, active dependents are an error, since systemd would stop them anyway.",
    )
    .default(Default::Bool(false)),
    OptionSpec::new("timeout", Kind::Int, "Seconds for the whole set to stop or start.").default(Default::Int(90)),
    OptionSpec::new("missing_ok", Kind::Bool, "A unit that does not exist is skipped instead of an error.").default(Default::Bool(false)),
    OptionSpec::new("record", Kind::Str, "The name of the stop record in the state dir, so several flows can keep their own.")
        .default(Default::Str("default")),
    OptionSpec::new("state_dir", Kind::Path, "refit's state dir.").default(Default::Str(crate::state::DEFAULT_STATE_DIR)),
];

pub static SPEC: ModuleSpec = ModuleSpec {
    name: "stop_services",
    short_description: "Stop exactly what must stop, in reverse dependency order, and restore exactly what ran",
    options: OPTIONS,
    mutually_exclusive: &[],
    required_one_of: &[],
    required_if: &[crate::ansible::RequiredIf {
        option: "state",
        value: "stopped",
        requires: &["services"],
    }],
};
