//! `thread/start`, `thread/resume`, `thread/list`, `thread/read` and `thread/archive`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use deputy_core::ThreadManager;
use deputy_core::config::ConfigLayers;

use deputy_core::rollout::{
    CreationQuery, SessionPage, archive_rollout, find_rollout, list_by_creation, read_events,
    session_head, session_summary,
};

use crate::protocol::{
    JsonRpcError, RequestId, ServerNotification, SortDirection, ThreadArchiveParams,
    ThreadArchiveResponse, ThreadArchivedNotification, ThreadListParams, ThreadListResponse,
    ThreadReadParams, ThreadReadResponse, ThreadResumeParams, ThreadSortKey, ThreadStartParams,
    ThreadStartedNotification, methods,
};

use crate::shapes::wire_thread;
use crate::translate;

use super::loading::Resumed;
use super::{
    Reply, Server, blocking, first_prompt, load, not_found_or_internal, settings_response,
};

/// `thread/list` page size when the client gives none, and the most it may ask for.
const DEFAULT_PAGE: u32 = 25;
const MAX_PAGE: u32 = 200;

impl Server {
    pub(super) async fn thread_start(&mut self, id: RequestId, params: ThreadStartParams) {
        let layers = self.layers_with(params.settings);
        let started = async {
            let config = layers
                .map_err(JsonRpcError::invalid_params)?
                .load()
                .map_err(|e| {
                    JsonRpcError::invalid_params(format!("cannot load the configuration: {e}"))
                })?;
            let thread = self
                .manager
                .start(config)
                .await
                .map_err(|e| JsonRpcError::internal(e.to_string()))?;
            let home = self.layers.deputy_home.clone();
            let response =
                settings_response(&self.manager, home, &thread, Vec::new(), None).await?;
            Ok::<_, JsonRpcError>((thread, response))
        }
        .await;
        match started {
            Ok((thread, response)) => {
                let wire = response.thread.clone();
                self.outgoing
                    .respond::<methods::ThreadStart>(id, &response)
                    .await;
                self.outgoing
                    .notify(ServerNotification::ThreadStarted(
                        ThreadStartedNotification { thread: wire },
                    ))
                    .await;
                // From the start: the thread's configuration warnings are reported too.
                self.follow(&thread, 0);
            }
            Err(error) => self.outgoing.error(Some(id), error).await,
        }
    }

    pub(super) async fn thread_resume(&mut self, id: RequestId, params: ThreadResumeParams) {
        let ThreadResumeParams {
            thread_id,
            settings,
        } = params;
        let layers = match self.layers_with(settings) {
            Ok(layers) => layers,
            Err(error) => {
                let error = JsonRpcError::invalid_params(error);
                return self.outgoing.error(Some(id), error).await;
            }
        };
        let home = self.layers.deputy_home.clone();
        let result = resume(self.manager.clone(), home, thread_id, layers).await;
        self.finish_resume(id, result).await;
    }

    pub(super) async fn thread_list(&self, params: ThreadListParams) -> Reply<methods::ThreadList> {
        let by_update = params.sort_key == Some(ThreadSortKey::UpdatedAt);
        let oldest_first = params.sort_direction == Some(SortDirection::Asc);
        let home = self.layers.deputy_home.clone();
        let limit = params.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE) as usize;
        let page = blocking(move || {
            let cwd = params.cwd.map(PathBuf::from);
            let query = CreationQuery {
                archived: params.archived.unwrap_or(false),
                cwd: cwd.as_deref(),
                before: params.cursor.as_deref(),
                limit,
                oldest_first,
            };
            if by_update {
                page_by_update(&home, query)
            } else {
                list_by_creation(&home, query).map_err(|e| JsonRpcError::internal(e.to_string()))
            }
        })
        .await??;
        // The next page lists the threads sorted after the last one here.
        let next_cursor = page.next_cursor;
        Ok(ThreadListResponse {
            data: page
                .sessions
                .into_iter()
                .map(|summary| {
                    let status = self.status_of(&summary.id);
                    wire_thread(summary, status, Vec::new())
                })
                .collect(),
            next_cursor,
        })
    }

    pub(super) async fn thread_read(&self, params: ThreadReadParams) -> Reply<methods::ThreadRead> {
        let ThreadReadParams {
            thread_id,
            include_turns,
        } = params;
        let home = self.layers.deputy_home.clone();
        let lookup = thread_id.clone();
        let path = blocking(move || find_rollout(&home, &lookup))
            .await?
            .map_err(|e| not_found_or_internal(&thread_id, e))?;
        // With its turns, the first prompt comes from the events read for them: the rollout
        // is read once, and no line of it is decoded twice.
        let summary_path = path.clone();
        let summary = blocking(move || {
            if include_turns {
                session_head(&summary_path)
            } else {
                session_summary(&summary_path)
            }
        })
        .await?
        .map_err(|e| JsonRpcError::internal(e.to_string()))?;
        let live = self.manager.get(&summary.id);
        let (turns, preview) = match (&live, include_turns) {
            (_, false) => (Vec::new(), None),
            (Some(thread), true) => {
                let events = thread.events_so_far().await;
                let running = thread.active_turn();
                let preview = first_prompt(events.iter().map(Arc::as_ref));
                let turns = translate::turns(events.iter().map(Arc::as_ref), running.as_deref());
                (turns, preview)
            }
            (None, true) => {
                let events = blocking(move || read_events(&path, 0, u64::MAX))
                    .await?
                    .map_err(|e| JsonRpcError::internal(e.to_string()))?;
                (translate::turns(&events, None), first_prompt(&events))
            }
        };
        let mut summary = summary;
        if let Some(preview) = preview {
            summary.first_prompt_preview = preview;
        }
        let status = self.status_of(&summary.id);
        Ok(ThreadReadResponse {
            thread: wire_thread(summary, status, turns),
        })
    }

    pub(super) async fn thread_archive(&mut self, id: RequestId, params: ThreadArchiveParams) {
        let ThreadArchiveParams { thread_id } = params;
        // This process lets go of it first: its turn stops and its rollout is closed.
        let canonical = self
            .manager
            .get(&thread_id)
            .map_or_else(|| thread_id.clone(), |t| t.id().to_string());
        self.manager.close_thread(&canonical).await;
        if let Some(follower) = self.followers.remove(&canonical) {
            follower.finish(std::time::Duration::from_secs(1)).await;
        }
        let home = self.layers.deputy_home.clone();
        let lookup = thread_id.clone();
        let archived = match blocking(move || archive_rollout(&home, &lookup)).await {
            Ok(Ok(_)) => Ok(ThreadArchiveResponse {}),
            Ok(Err(err)) => Err(not_found_or_internal(&thread_id, err)),
            Err(err) => Err(err),
        };
        let done = archived.is_ok();
        self.reply::<methods::ThreadArchive>(id, archived).await;
        if done {
            self.outgoing
                .notify(ServerNotification::ThreadArchived(
                    ThreadArchivedNotification {
                        thread_id: canonical,
                    },
                ))
                .await;
        }
    }
}

/// A page of `thread/list` by last update: every matching thread is read (as `deputy
/// sessions list` reads them), ordered by update time, and the page continues after the
/// cursor's thread where it now stands.
fn page_by_update(home: &Path, query: CreationQuery<'_>) -> Result<SessionPage, JsonRpcError> {
    let everything = CreationQuery {
        before: None,
        limit: usize::MAX,
        ..query
    };
    let mut sessions = list_by_creation(home, everything)
        .map_err(|e| JsonRpcError::internal(e.to_string()))?
        .sessions;
    sessions.sort_by(|a, b| (a.updated, &a.id).cmp(&(b.updated, &b.id)));
    if !query.oldest_first {
        sessions.reverse();
    }
    let start = match query.before {
        None => 0,
        Some(cursor) => {
            1 + sessions
                .iter()
                .position(|s| s.id == cursor)
                .ok_or_else(|| JsonRpcError::invalid_params(format!("unknown cursor `{cursor}`")))?
        }
    };
    let mut sessions: Vec<_> = sessions.into_iter().skip(start).collect();
    let more = sessions.len() > query.limit;
    sessions.truncate(query.limit);
    // Positional: the next page starts after this page's last thread, where it stands then.
    let next_cursor = more
        .then(|| sessions.last().map(|s| s.id.clone()))
        .flatten();
    Ok(SessionPage {
        sessions,
        more,
        next_cursor,
    })
}

/// Loads thread `thread_id` (unless it is live) and builds the `thread/resume` response:
/// its turns so far and its settings. Runs on its own, off the request path, for a thread
/// that is not loaded yet (see `loading.rs`).
pub(super) async fn resume(
    manager: Arc<ThreadManager>,
    home: PathBuf,
    thread_id: String,
    layers: ConfigLayers,
) -> Resumed {
    let (thread, resumed_after) = load(&manager, &thread_id, layers).await?;
    let events = thread.events_so_far().await;
    let running = thread.active_turn();
    let turns = translate::turns(events.iter().map(Arc::as_ref), running.as_deref());
    let preview = first_prompt(events.iter().map(Arc::as_ref));
    let response = settings_response(&manager, home, &thread, turns, preview).await?;
    Ok((thread, resumed_after, response))
}
