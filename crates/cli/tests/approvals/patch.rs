//! Asking about patches: the exact changes shown, where patches apply unasked, and
//! session-wide approval by file.

use std::fs;

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::exec_approval::decision_schema;
use crate::harness::{Setup, patch, question_params, say};

const FOUR_CHANGES: &str = "\
*** Begin Patch
*** Add File: added.txt
+brand new
*** Delete File: delete.txt
*** Update File: update.txt
@@
 one
-two
+TWO
 three
*** Update File: move.txt
*** Move to: moved.txt
@@
 keep
-old
+new
*** End Patch
";

#[test]
fn patch_elicitation_lists_add_delete_update_and_move_exactly() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    harness.write("delete.txt", "bye\n");
    harness.write("update.txt", "one\ntwo\nthree\n");
    harness.write("move.txt", "keep\nold\n");
    harness
        .model
        .push_all([patch("call-patch", FOUR_CHANGES), say("patched")]);

    let id = harness.codex("edit files");
    let request = harness.elicitation("call-patch");
    let event = harness.event_params(id, "apply_patch_approval_request");
    let ws = harness.workspace();
    let path = |name: &str| ws.join(name).display().to_string();
    let changes = json!({
        path("added.txt"): {"type": "add", "content": "brand new\n"},
        path("delete.txt"): {"type": "delete", "content": "bye\n"},
        path("update.txt"): {
            "type": "update",
            "unified_diff": "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
            "move_path": null,
        },
        path("move.txt"): {
            "type": "update",
            "unified_diff": "@@ -1,2 +1,2 @@\n keep\n-old\n+new\n",
            "move_path": path("moved.txt"),
        },
    });
    assert_eq!(
        question_params(&request),
        json!({
            "message": "Allow the agent to change 4 files?\nadded: added.txt\nmodified: update.txt\ndeleted: delete.txt\nmoved: move.txt → moved.txt",
            "requestedSchema": decision_schema(),
            "threadId": harness.thread_of(id),
            "codex_elicitation": "patch-approval",
            "codex_mcp_tool_call_id": id.to_string(),
            "codex_event_id": event["id"],
            "codex_call_id": "call-patch",
            "codex_changes": changes,
        })
    );
    assert_eq!(event["msg"]["changes"], changes);
    assert!(
        harness.exists("delete.txt"),
        "nothing changes before the answer"
    );

    harness
        .client
        .respond(request["id"].clone(), json!({"decision": "approved"}));
    assert_eq!(
        harness.result(id)["structuredContent"]["content"],
        "patched"
    );
    let read = |name: &str| fs::read_to_string(ws.join(name)).ok();
    assert_eq!(read("added.txt").as_deref(), Some("brand new\n"));
    assert_eq!(read("delete.txt"), None);
    assert_eq!(read("update.txt").as_deref(), Some("one\nTWO\nthree\n"));
    assert_eq!(read("move.txt"), None);
    assert_eq!(read("moved.txt").as_deref(), Some("keep\nnew\n"));
}

#[test]
fn on_request_applies_patches_inside_writable_roots_and_asks_outside() {
    let harness = Setup {
        workspace_only: true,
        ..Setup::new("on-request", "workspace-write")
    }
    .start();
    harness.model.push_all([
        patch(
            "inside",
            "*** Begin Patch\n*** Add File: inside.txt\n+in\n*** End Patch\n",
        ),
        patch(
            "outside",
            "*** Begin Patch\n*** Add File: ../outside.txt\n+out\n*** End Patch\n",
        ),
        say("both written"),
    ]);

    let id = harness.codex("write two files");
    let question = harness.answer("outside", json!({"decision": "approved"}));
    assert_eq!(
        harness.result(id)["structuredContent"]["content"],
        "both written"
    );

    let outside = harness
        .home
        .path()
        .canonicalize()
        .unwrap()
        .join("outside.txt");
    assert_eq!(
        question["params"]["codex_changes"],
        json!({outside.display().to_string(): {"type": "add", "content": "out\n"}})
    );
    assert_eq!(
        harness.elicitations().len(),
        1,
        "only the outside patch asks"
    );
    assert!(harness.exists("inside.txt"));
    assert_eq!(fs::read_to_string(&outside).ok().as_deref(), Some("out\n"));
    let auto: Vec<_> = harness
        .events("patch_apply_begin")
        .iter()
        .map(|b| (b["call_id"].clone(), b["auto_approved"].clone()))
        .collect();
    assert_eq!(
        auto,
        [
            (json!("inside"), json!(true)),
            (json!("outside"), json!(false))
        ]
    );
}

#[test]
fn patch_approved_for_session_covers_the_same_files_only() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    harness.write("a.txt", "1\n");
    let update = |from: &str, to: &str| {
        format!("*** Begin Patch\n*** Update File: a.txt\n@@\n-{from}\n+{to}\n*** End Patch\n")
    };
    harness.model.push_all([
        patch("p1", &update("1", "2")),
        patch("p2", &update("2", "3")),
        patch(
            "p3",
            "*** Begin Patch\n*** Add File: b.txt\n+b\n*** End Patch\n",
        ),
        say("done"),
    ]);

    let id = harness.codex("edit");
    harness.answer("p1", json!({"decision": "approved_for_session"}));
    harness.answer("p3", json!({"decision": "denied"}));
    assert_eq!(harness.result(id)["structuredContent"]["content"], "done");

    let asked: Vec<_> = harness
        .elicitations()
        .iter()
        .map(|m| m["params"]["codex_call_id"].clone())
        .collect();
    assert_eq!(asked, [json!("p1"), json!("p3")]);
    assert_eq!(
        fs::read_to_string(harness.home.workspace().join("a.txt"))
            .ok()
            .as_deref(),
        Some("3\n")
    );
    assert!(!harness.exists("b.txt"));
    assert!(harness.output_for("p3").contains("declined"));
}

#[test]
fn a_patch_question_names_the_first_files_counts_the_rest_and_gives_the_reason() {
    let harness = Setup {
        workspace_only: true,
        ..Setup::new("on-request", "workspace-write")
    }
    .start();
    let outside = harness.home.path().canonicalize().unwrap().join("far.txt");
    let mut text = String::from("*** Begin Patch\n");
    for n in 0..7 {
        text.push_str(&format!("*** Add File: f{n}.txt\n+{n}\n"));
    }
    text.push_str(&format!(
        "*** Add File: {}\n+far\n*** End Patch\n",
        outside.display()
    ));
    harness.model.push_all([patch("p1", &text), say("done")]);

    let id = harness.codex("write eight files");
    let question = harness.answer("p1", json!({"decision": "denied"}));
    harness.result(id);
    let message = question["params"]["message"].as_str().unwrap_or_default();
    assert_eq!(
        message,
        format!(
            "Allow the agent to change 8 files?\nadded: {}, f0.txt, f1.txt, f2.txt, f3.txt\n… and 3 more\nreason: the patch writes outside the sandbox's writable roots",
            outside.display()
        )
    );
    // The declined patch closes its entry, as Codex does.
    let ends = harness.events("patch_apply_end");
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["success"], false);
    assert_eq!(ends[0]["status"], "declined");
    assert!(!harness.exists("f0.txt"));
}
