//! `turn/start`, `review/start`, `thread/compact/start` and `turn/interrupt`.

use deputy_core::rollout::find_rollout;
use deputy_protocol::TurnOverrides;

use crate::follower::Command;
use crate::protocol::{
    ClientMethod, JsonRpcError, RequestId, ReviewDelivery, ReviewStartParams,
    ThreadCompactStartParams, TurnInterruptParams, TurnStartParams, methods,
};
use crate::shapes::{engine_sandbox_policy, input_items, review_request};

use super::{Server, blocking, not_available, not_found_or_internal};

impl Server {
    pub(super) async fn turn_start(&mut self, id: RequestId, params: TurnStartParams) {
        let TurnStartParams {
            thread_id,
            input,
            cwd,
            approval_policy,
            sandbox_policy,
            model,
            output_schema,
        } = params;
        let prepared = async {
            if output_schema
                .as_ref()
                .is_some_and(|schema| !schema.is_object())
            {
                return Err(JsonRpcError::invalid_params(
                    "`outputSchema` must be a JSON Schema object",
                ));
            }
            let items = input_items(input)?;
            let sandbox_policy = sandbox_policy.map(engine_sandbox_policy).transpose()?;
            let overrides = TurnOverrides {
                cwd,
                model,
                approval_policy,
                sandbox_policy,
            };
            let overrides = (overrides != TurnOverrides::default()).then_some(overrides);
            let (thread, _) = self.load(&thread_id, (*self.layers).clone()).await?;
            if let Some(overrides) = &overrides {
                // Refused now rather than failing the turn later.
                thread.config().with_overrides(overrides).map_err(|e| {
                    JsonRpcError::invalid_params(format!("the turn's settings cannot apply: {e}"))
                })?;
            }
            Ok::<_, JsonRpcError>((thread, items, overrides))
        }
        .await;
        let (thread, items, overrides) = match prepared {
            Ok(prepared) => prepared,
            Err(error) => return self.outgoing.error(Some(id), error).await,
        };
        self.command(
            &thread,
            Command::StartTurn {
                id,
                items,
                overrides,
                output_schema,
            },
        )
        .await;
    }

    pub(super) async fn review_start(&mut self, id: RequestId, params: ReviewStartParams) {
        let ReviewStartParams {
            thread_id,
            target,
            delivery,
        } = params;
        if delivery == Some(ReviewDelivery::Detached) {
            let error = not_available(
                methods::ReviewStart::METHOD,
                "reviews run inline, in the thread itself (delivery `inline`)",
            );
            return self.outgoing.error(Some(id), error).await;
        }
        let thread = match self.load(&thread_id, (*self.layers).clone()).await {
            Ok((thread, _)) => thread,
            Err(error) => return self.outgoing.error(Some(id), error).await,
        };
        let request = review_request(target);
        self.command(&thread, Command::StartReview { id, request })
            .await;
    }

    pub(super) async fn thread_compact_start(
        &mut self,
        id: RequestId,
        params: ThreadCompactStartParams,
    ) {
        let ThreadCompactStartParams { thread_id } = params;
        let thread = match self.load(&thread_id, (*self.layers).clone()).await {
            Ok((thread, _)) => thread,
            Err(error) => return self.outgoing.error(Some(id), error).await,
        };
        self.command(&thread, Command::StartCompaction { id }).await;
    }

    pub(super) async fn turn_interrupt(&mut self, id: RequestId, params: TurnInterruptParams) {
        let TurnInterruptParams { thread_id, turn_id } = params;
        let Some(thread) = self.manager.get(&thread_id) else {
            // Not loaded here: no turn of it can be running.
            let home = self.layers.deputy_home.clone();
            let lookup = thread_id.clone();
            let error = match blocking(move || find_rollout(&home, &lookup)).await {
                Ok(Ok(_)) => JsonRpcError::invalid_request(format!(
                    "turn {turn_id} is not running on thread {thread_id}"
                )),
                Ok(Err(err)) => not_found_or_internal(&thread_id, err),
                Err(err) => err,
            };
            return self.outgoing.error(Some(id), error).await;
        };
        self.command(&thread, Command::Interrupt { id, turn_id })
            .await;
    }
}
