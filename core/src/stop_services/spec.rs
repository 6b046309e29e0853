//! The argument spec of `stop_services`.

use crate::ansible::{Default, Elem, Kind, ModuleSpec, OptionSpec};

pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "services",
        Kind::List(Elem::Str),
        "Units to stop. A name without a suffix is a C(.service).\nNot needed for O(state=restored).",
    )
    .aliases(&["units"]),
    OptionSpec::new(
        "state",
        Kind::Str,
        "C(stopped) stops the set and records which were active.\nC(restored) starts exactly the recorded set again, in dependency order.\nC(started) starts the given units, in dependency order.",
    )
    .default(Default::Str("stopped"))
    .choices(&["stopped", "restored", "started"]),
    OptionSpec::new(
        "dependents",
        Kind::Bool,
        "Also stop the units that C(Requires), C(BindsTo) or are C(PartOf) these, transitively.\nWithout it, an active dependent is an error, since systemd would stop it anyway.",
    )
    .default(Default::Bool(false)),
    OptionSpec::new("timeout", Kind::Int, "Seconds for the whole set to stop or start; past it the task fails naming the units still waiting.").default(Default::Int(90)).max(crate::ansible::spec::TIMEOUT_MAX),
    OptionSpec::new("missing_ok", Kind::Bool, "Skip a unit that does not exist, instead of failing.").default(Default::Bool(false)),
    OptionSpec::new("record", Kind::Str, "The name of the stop record, so several flows can keep their own.")
        .default(Default::Str("default")),
    OptionSpec::new("run_id", Kind::Str, crate::state::RUN_ID_DOC),
    crate::scope::SCOPE_OPTION,
    crate::scope::SCOPE_USER_OPTION,
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
