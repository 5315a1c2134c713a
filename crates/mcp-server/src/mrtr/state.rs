//! The `requestState` of a paused call: which call, on which instance, waits for which
//! answers — sealed with HMAC-SHA256 (rmcp's `RequestStateCodec`) under a key kept in
//! `$DEPUTY_HOME`, bound to the tool it was issued for, and expiring.
//!
//! The client echoes it back untouched; anything else — a forged, altered, expired or
//! re-targeted state — fails to open and the retry is refused with a JSON-RPC error.
//! Instances sharing a home share the key, so one that did not issue a state can still
//! verify it and say where it belongs (see ARCHITECTURE.md, "Scale-out").

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};

/// The key file under `$DEPUTY_HOME`.
pub(super) const KEY_FILE: &str = "mcp-request-state.key";

/// Bytes of key material.
const KEY_BYTES: usize = 32;

/// What a `requestState` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct State {
    /// The instance holding the paused call.
    pub(super) instance: String,
    /// The paused call.
    pub(super) call: String,
    /// Its thread, so that a load balancer's mistake can be told apart from a forgery.
    pub(super) thread: String,
    /// The input requests the retry answers, by key.
    pub(super) questions: Vec<String>,
}

/// Why a `requestState` was refused.
#[derive(Debug, thiserror::Error)]
pub(super) enum StateError {
    /// Not issued by this server, or changed since.
    #[error(
        "the requestState was not issued by this server or was altered: {0}; retry the call without it to start over"
    )]
    Invalid(RequestStateError),
    /// Issued, but its time has passed.
    #[error(
        "the requestState has expired: the paused call gave up waiting; its approval was declined"
    )]
    Expired,
}

/// Seals and opens states with the home's key.
pub(super) struct StateCodec(RequestStateCodec);

impl StateCodec {
    /// The codec keyed by `home`'s key file, created (owner-only) on first use.
    /// Blocking file I/O: call it off the async runtime.
    pub(super) fn load(home: &Path) -> io::Result<Self> {
        let key = read_or_create_key(&home.join(KEY_FILE))?;
        RequestStateCodec::try_new(key)
            .map(Self)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))
    }

    /// Seals `state` for retries of `tool`, valid for `ttl`.
    pub(super) fn seal(&self, state: &State, tool: &str, ttl: Duration) -> String {
        let options = SealOptions::new().associated_data(tool.as_bytes()).ttl(ttl);
        // A plain struct of strings always serializes.
        let payload = serde_json::to_vec(state).unwrap_or_default();
        self.0.seal_with(&payload, &options)
    }

    /// Opens a state echoed by a retry of `tool`.
    pub(super) fn open(&self, sealed: &str, tool: &str) -> Result<State, StateError> {
        match self.0.open_json_with::<State>(sealed, tool.as_bytes()) {
            Ok(state) => Ok(state),
            Err(RequestStateError::Expired) => Err(StateError::Expired),
            Err(err) => Err(StateError::Invalid(err)),
        }
    }
}

/// Reads the key, or creates it from the kernel's random source when there is none.
#[allow(
    clippy::disallowed_methods,
    reason = "blocking: `StateCodec::load` runs in spawn_blocking"
)]
fn read_or_create_key(path: &PathBuf) -> io::Result<Vec<u8>> {
    match fs::read(path) {
        Ok(key) if key.len() >= KEY_BYTES => return Ok(key),
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is shorter than {KEY_BYTES} bytes", path.display()),
            ));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut key = vec![0u8; KEY_BYTES];
    fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    // Written aside and linked into place, so that two servers starting at once end
    // up with one key: the second link fails, and that server reads the first's.
    let aside = path.with_extension(format!("{}.partial", std::process::id()));
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&aside)?;
    file.write_all(&key)?;
    file.sync_all()?;
    let linked = fs::hard_link(&aside, path);
    let _ = fs::remove_file(&aside);
    match linked {
        Ok(()) => Ok(key),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => fs::read(path),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn state() -> State {
        State {
            instance: "i".into(),
            call: "c".into(),
            thread: "t".into(),
            questions: vec!["approval-1".into()],
        }
    }

    #[test]
    fn a_sealed_state_opens_for_its_tool_only_and_not_once_altered() {
        let home = tempfile::tempdir().unwrap();
        let codec = StateCodec::load(home.path()).unwrap();
        let mode = fs::metadata(home.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let sealed = codec.seal(&state(), "codex", Duration::from_secs(60));
        assert_eq!(codec.open(&sealed, "codex").unwrap(), state());
        assert!(matches!(
            codec.open(&sealed, "codex-reply"),
            Err(StateError::Invalid(_))
        ));
        let mut altered = sealed.clone().into_bytes();
        let middle = altered.len() / 2;
        altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert!(matches!(
            codec.open(&altered, "codex"),
            Err(StateError::Invalid(_))
        ));
        assert!(matches!(
            codec.open("forged", "codex"),
            Err(StateError::Invalid(_))
        ));
        // Another home, another key: its states are not ours.
        let other = tempfile::tempdir().unwrap();
        let stranger = StateCodec::load(other.path()).unwrap();
        assert!(matches!(
            stranger.open(&sealed, "codex"),
            Err(StateError::Invalid(_))
        ));
        // The same home again: the key was kept.
        assert_eq!(
            StateCodec::load(home.path())
                .unwrap()
                .open(&sealed, "codex")
                .unwrap(),
            state()
        );
    }

    #[test]
    fn an_expired_state_says_so() {
        let home = tempfile::tempdir().unwrap();
        let codec = StateCodec::load(home.path()).unwrap();
        let sealed = codec.seal(&state(), "codex", Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(20));
        assert!(matches!(
            codec.open(&sealed, "codex"),
            Err(StateError::Expired)
        ));
    }
}
