//! Session modes and the model choice.
//!
//! A mode is an approval preset: an approval policy with a sandbox mode. A session
//! starts in the preset its configuration matches, or in a mode standing for the
//! configuration as it is when it matches none; `session/set_mode` changes the policies
//! from the session's next prompt on (the engine changes a thread's settings with a
//! turn). The model is a session config option (`category: model`) listing the
//! configured models.

use agent_client_protocol::v1::schema::{
    SessionConfigId, SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
    SessionMode, SessionModeId, SessionModeState,
};
use deputy_core::config::Config;
use deputy_protocol::{AskForApproval, SandboxMode, TurnOverrides};

/// The id of the model config option.
pub(crate) const MODEL_OPTION: &str = "model";

/// The id of the mode standing for a configuration that matches no preset.
const CONFIGURED: &str = "configured";

/// An approval preset.
struct Preset {
    id: &'static str,
    name: &'static str,
    description: &'static str,
    approval: AskForApproval,
    sandbox: SandboxMode,
}

const PRESETS: [Preset; 4] = [
    Preset {
        id: "read-only",
        name: "Read only",
        description: "Reads files and runs read-only commands; asks before anything that writes \
                      or needs the network.",
        approval: AskForApproval::OnRequest,
        sandbox: SandboxMode::ReadOnly,
    },
    Preset {
        id: "ask",
        name: "Ask for everything",
        description: "Asks before every edit and every command that is not known to be safe; \
                      what runs is confined to the workspace.",
        approval: AskForApproval::Untrusted,
        sandbox: SandboxMode::WorkspaceWrite,
    },
    Preset {
        id: "auto",
        name: "Auto (workspace write)",
        description: "Edits files and runs commands in the workspace without asking; asks to \
                      leave it or to use the network.",
        approval: AskForApproval::OnRequest,
        sandbox: SandboxMode::WorkspaceWrite,
    },
    Preset {
        id: "full-access",
        name: "Full access",
        description: "Runs everything without a sandbox and without asking. Use with care.",
        approval: AskForApproval::Never,
        sandbox: SandboxMode::DangerFullAccess,
    },
];

/// The mode `config`'s policies stand for.
pub(crate) fn current_mode(config: &Config) -> SessionModeId {
    PRESETS
        .iter()
        .find(|p| p.approval == config.approval_policy && p.sandbox == config.sandbox_mode)
        .map_or_else(
            || SessionModeId::new(CONFIGURED),
            |p| SessionModeId::new(p.id),
        )
}

/// The modes a session with `config` offers, and the current one.
pub(crate) fn mode_state(config: &Config, current: &SessionModeId) -> SessionModeState {
    let mut modes: Vec<SessionMode> = PRESETS
        .iter()
        .map(|p| SessionMode::new(p.id, p.name).description(p.description.to_string()))
        .collect();
    // The configuration's own policies stay selectable when they match no preset.
    if current_mode(config).0.as_ref() == CONFIGURED {
        modes.push(
            SessionMode::new(CONFIGURED, "As configured").description(format!(
                "approval policy {}, sandbox {}",
                config.approval_policy.as_str(),
                config.sandbox_mode.as_str()
            )),
        );
    }
    SessionModeState::new(current.clone(), modes)
}

/// The settings mode `id` gives a session configured with `config`; `None` when no such
/// mode is offered.
pub(crate) fn mode_overrides(id: &SessionModeId, config: &Config) -> Option<TurnOverrides> {
    let (approval, sandbox) = if id.0.as_ref() == CONFIGURED {
        (config.approval_policy, config.sandbox_mode)
    } else {
        let preset = PRESETS.iter().find(|p| p.id == id.0.as_ref())?;
        (preset.approval, preset.sandbox)
    };
    // The configured writable roots and network choice stay; only the mode changes.
    let mut settings = config.clone();
    settings.sandbox_mode = sandbox;
    Some(TurnOverrides {
        approval_policy: Some(approval),
        sandbox_policy: Some(settings.sandbox_policy()),
        ..TurnOverrides::default()
    })
}

/// The model option: the configured models (the default, then each profile's), with
/// `current` selected.
pub(crate) fn model_option(models: &[String], current: &str) -> SessionConfigOption {
    let mut values: Vec<&str> = models.iter().map(String::as_str).collect();
    if !values.contains(&current) {
        values.insert(0, current);
    }
    let options: Vec<SessionConfigSelectOption> = values
        .into_iter()
        .map(|model| SessionConfigSelectOption::new(model.to_string(), model.to_string()))
        .collect();
    SessionConfigOption::select(MODEL_OPTION, "Model", current.to_string(), options)
        .category(SessionConfigOptionCategory::Model)
}

/// Whether `id` names the model option.
pub(crate) fn is_model_option(id: &SessionConfigId) -> bool {
    id.0.as_ref() == MODEL_OPTION
}
