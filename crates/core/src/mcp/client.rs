//! deputy's side of one MCP connection: what it tells the server about itself, and its
//! answers to the server's own requests.
//!
//! - `roots/list`: the working directories and writable roots of the threads using the
//!   server (a shared server is told of every one; `notifications/roots/list_changed`
//!   when that set changes).
//! - `elicitation/create`: relayed to the turn whose tool call is running on the server
//!   (the oldest, when several are), which asks deputy's own client; with no call running
//!   there is nobody to ask, and it is declined.
//! - `sampling/createMessage`: refused — deputy does not lend its model to servers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation, ProtocolVersion,
    RootsCapabilities,
};
use rmcp::service::{RequestContext, RoleClient};
use tokio::sync::{mpsc, oneshot};

use crate::sync::lock;

/// A server's request for the user's input, on its way to the turn that will ask.
pub(crate) struct Elicitation {
    /// What the server asks.
    pub(crate) request: ElicitRequestParams,
    /// Where the answer goes.
    pub(crate) reply: oneshot::Sender<ElicitResult>,
}

/// What the connection's handler needs from the rest of deputy, shared with the server.
#[derive(Default)]
pub(crate) struct Links {
    /// The roots of each thread using the server, by lease.
    roots: Mutex<BTreeMap<u64, Vec<PathBuf>>>,
    /// The tool calls running on the server that can ask the user, oldest first.
    askers: Mutex<BTreeMap<u64, mpsc::Sender<Elicitation>>>,
    next: std::sync::atomic::AtomicU64,
}

impl Links {
    /// A fresh id for a lease or a call.
    pub(crate) fn next_id(&self) -> u64 {
        self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets the roots of the thread holding `lease`; true when the set of roots changed.
    pub(crate) fn set_roots(&self, lease: u64, roots: Vec<PathBuf>) -> bool {
        let mut all = lock(&self.roots);
        let before = union(&all);
        all.insert(lease, roots);
        union(&all) != before
    }

    /// Forgets the roots of `lease`; true when the set of roots changed.
    pub(crate) fn remove_roots(&self, lease: u64) -> bool {
        let mut all = lock(&self.roots);
        let before = union(&all);
        all.remove(&lease);
        union(&all) != before
    }

    /// Lets the call `id` be asked the server's questions until [`Links::remove_asker`].
    pub(crate) fn add_asker(&self, id: u64, asker: mpsc::Sender<Elicitation>) {
        lock(&self.askers).insert(id, asker);
    }

    /// The call `id` is over.
    pub(crate) fn remove_asker(&self, id: u64) {
        lock(&self.askers).remove(&id);
    }
}

fn union(roots: &BTreeMap<u64, Vec<PathBuf>>) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = roots.values().flatten().cloned().collect();
    all.sort();
    all.dedup();
    all
}

/// The rmcp client handler of one connection.
pub(crate) struct DeputyClient {
    pub(crate) links: Arc<Links>,
}

impl ClientHandler for DeputyClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(true);
        capabilities.roots = Some(roots);
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        let mut info = ClientConfig::default();
        // The handshake era: newer revisions forbid the server's requests deputy answers.
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info.capabilities = capabilities;
        info.client_info = Implementation::new("deputy", env!("CARGO_PKG_VERSION"));
        info
    }

    #[allow(
        deprecated,
        reason = "roots are deprecated in the newest MCP revision, which deputy's client does not speak"
    )]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        let roots = union(&lock(&self.links.roots))
            .into_iter()
            .map(|path| {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.display().to_string());
                rmcp::model::Root::new(file_uri(&path)).with_name(name)
            })
            .collect();
        Ok(rmcp::model::ListRootsResult::new(roots))
    }

    #[allow(
        deprecated,
        reason = "sampling is deprecated in the newest MCP revision; older servers still ask"
    )]
    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        Err(ErrorData::invalid_request(
            "deputy does not offer sampling: its model is not available to MCP servers",
            None,
        ))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asker = lock(&self.links.askers).values().next().cloned();
        let Some(asker) = asker else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let (reply, answer) = oneshot::channel();
        if asker.send(Elicitation { request, reply }).await.is_err() {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        // A call that ends without answering (stopped, timed out) cancels the question.
        Ok(answer
            .await
            .unwrap_or_else(|_| ElicitResult::new(ElicitationAction::Cancel)))
    }
}

/// `file://` and the path, percent-encoded where a URI needs it.
pub(crate) fn file_uri(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_the_union_of_every_thread_and_changes_are_noticed() {
        let links = Links::default();
        assert!(links.set_roots(1, vec!["/w/a".into(), "/w/b".into()]));
        assert!(!links.set_roots(2, vec!["/w/a".into()]));
        assert_eq!(
            union(&lock(&links.roots)),
            [PathBuf::from("/w/a"), PathBuf::from("/w/b")]
        );
        assert!(!links.remove_roots(2));
        assert!(links.remove_roots(1));
    }

    #[test]
    fn file_uris_are_encoded() {
        assert_eq!(
            file_uri(std::path::Path::new("/w/my dir/ü")),
            "file:///w/my%20dir/%C3%BC"
        );
    }
}
