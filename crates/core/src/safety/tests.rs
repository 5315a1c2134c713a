use super::*;
use AskForApproval::*;
use KnownSafe::{Always, No, WhenConfinedReadOnly};
use SandboxMode::*;

fn facts(policy: AskForApproval, mode: SandboxMode) -> ExecRequestFacts<'static> {
    ExecRequestFacts {
        policy,
        mode,
        known_safe: No,
        escalation: None,
        approved_for_session: false,
        sandbox_available: Ok(()),
    }
}

const RUN_SANDBOXED: ExecAssessment = ExecAssessment::Run { sandboxed: true };
const RUN_FREE: ExecAssessment = ExecAssessment::Run { sandboxed: false };

#[test]
fn exec_decision_table() {
    let ask = ExecAssessment::Ask { reason: None };
    let ask_why = ExecAssessment::Ask {
        reason: Some("needs network".into()),
    };
    // (policy, mode, known_safe, escalation, expected)
    let table: Vec<(
        AskForApproval,
        SandboxMode,
        KnownSafe,
        Option<&str>,
        ExecAssessment,
    )> = vec![
        (Untrusted, WorkspaceWrite, Always, None, RUN_SANDBOXED),
        (Untrusted, WorkspaceWrite, No, None, ask.clone()),
        (
            Untrusted,
            ReadOnly,
            No,
            Some("needs network"),
            ask_why.clone(),
        ),
        (Untrusted, DangerFullAccess, Always, None, RUN_FREE),
        (Untrusted, DangerFullAccess, No, None, ask.clone()),
        (OnFailure, WorkspaceWrite, No, None, RUN_SANDBOXED),
        (
            OnFailure,
            ReadOnly,
            No,
            Some("needs network"),
            ask_why.clone(),
        ),
        (OnRequest, WorkspaceWrite, No, None, RUN_SANDBOXED),
        (OnRequest, ReadOnly, Always, None, RUN_SANDBOXED),
        (
            OnRequest,
            WorkspaceWrite,
            No,
            Some("needs network"),
            ask_why.clone(),
        ),
        (
            OnRequest,
            DangerFullAccess,
            No,
            Some("needs network"),
            RUN_FREE,
        ),
        (Never, WorkspaceWrite, No, None, RUN_SANDBOXED),
        // git reads only as long as the sandbox keeps it read-only: its configuration
        // (fsmonitor, external diff) can run programs.
        (
            Untrusted,
            ReadOnly,
            WhenConfinedReadOnly,
            None,
            RUN_SANDBOXED,
        ),
        (
            Untrusted,
            WorkspaceWrite,
            WhenConfinedReadOnly,
            None,
            ask.clone(),
        ),
        (
            Untrusted,
            DangerFullAccess,
            WhenConfinedReadOnly,
            None,
            ask.clone(),
        ),
        (
            OnRequest,
            DangerFullAccess,
            WhenConfinedReadOnly,
            None,
            RUN_FREE,
        ),
        (
            Never,
            WorkspaceWrite,
            WhenConfinedReadOnly,
            None,
            RUN_SANDBOXED,
        ),
        (Never, DangerFullAccess, No, None, RUN_FREE),
    ];
    for (policy, mode, known_safe, escalation, expected) in table {
        let got = assess_exec(ExecRequestFacts {
            known_safe,
            escalation,
            ..facts(policy, mode)
        });
        assert_eq!(
            got, expected,
            "{policy:?} {mode:?} safe={known_safe:?} esc={escalation:?}"
        );
    }
}

#[test]
fn escalation_asks_even_for_known_safe_commands_and_under_on_failure() {
    let ask_why = ExecAssessment::Ask {
        reason: Some("needs network".into()),
    };
    for (policy, known_safe) in [(Untrusted, Always), (OnFailure, No), (OnRequest, Always)] {
        let got = assess_exec(ExecRequestFacts {
            known_safe,
            escalation: Some("needs network"),
            ..facts(policy, WorkspaceWrite)
        });
        assert_eq!(got, ask_why, "{policy:?} safe={known_safe:?}");
    }
}

#[test]
fn blank_justification_is_shown_as_no_reason() {
    for (policy, mode) in [(OnRequest, WorkspaceWrite), (Untrusted, DangerFullAccess)] {
        let got = assess_exec(ExecRequestFacts {
            escalation: Some("  "),
            ..facts(policy, mode)
        });
        assert_eq!(
            got,
            ExecAssessment::Ask { reason: None },
            "{policy:?} {mode:?}"
        );
    }
}

#[test]
fn never_refuses_escalation_instead_of_asking() {
    let got = assess_exec(ExecRequestFacts {
        escalation: Some("x"),
        ..facts(Never, WorkspaceWrite)
    });
    assert!(matches!(got, ExecAssessment::Reject(m) if m.contains("never")));
}

#[test]
fn approved_for_session_runs_without_asking_under_every_policy() {
    for policy in [Untrusted, OnFailure, OnRequest, Never] {
        let got = assess_exec(ExecRequestFacts {
            approved_for_session: true,
            ..facts(policy, WorkspaceWrite)
        });
        assert_eq!(got, RUN_FREE);
    }
}

#[test]
fn missing_sandbox_fails_closed() {
    for (policy, asks) in [
        (OnRequest, true),
        (OnFailure, true),
        (Never, false),
        (Untrusted, false),
    ] {
        let got = assess_exec(ExecRequestFacts {
            known_safe: Always,
            sandbox_available: Err("no Landlock"),
            ..facts(policy, WorkspaceWrite)
        });
        match got {
            ExecAssessment::Ask { reason: Some(r) } if asks => assert!(r.contains("no Landlock")),
            ExecAssessment::Reject(r) if !asks => assert!(r.contains("no Landlock")),
            other => panic!("{policy:?}: {other:?}"),
        }
    }
}

#[test]
fn git_under_untrusted_never_runs_unconfined_for_want_of_a_sandbox() {
    let got = assess_exec(ExecRequestFacts {
        known_safe: WhenConfinedReadOnly,
        sandbox_available: Err("no Landlock"),
        ..facts(Untrusted, ReadOnly)
    });
    assert!(matches!(got, ExecAssessment::Reject(r) if r.contains("no Landlock")));
}

#[test]
fn only_on_failure_offers_unsandboxed_retry() {
    assert!(offer_unsandboxed_retry(OnFailure, true));
    assert!(!offer_unsandboxed_retry(OnFailure, false));
    for policy in [Untrusted, OnRequest, Never] {
        assert!(!offer_unsandboxed_retry(policy, true));
    }
}

#[test]
fn patch_decision_table() {
    use PatchAssessment::*;
    let table = [
        (Untrusted, WorkspaceWrite, true, Ask),
        (Untrusted, DangerFullAccess, true, Ask),
        (OnRequest, WorkspaceWrite, true, Apply),
        (OnRequest, WorkspaceWrite, false, Ask),
        (OnRequest, ReadOnly, false, Ask),
        (OnRequest, DangerFullAccess, false, Apply),
        (OnFailure, WorkspaceWrite, true, Apply),
        (OnFailure, WorkspaceWrite, false, Ask),
        (Never, WorkspaceWrite, true, Apply),
        (Never, DangerFullAccess, false, Apply),
    ];
    for (policy, mode, writable, expected) in table {
        assert_eq!(
            assess_patch(policy, mode, writable, false),
            expected,
            "{policy:?} {mode:?} {writable}"
        );
    }
    assert!(matches!(
        assess_patch(Never, WorkspaceWrite, false, false),
        Reject(_)
    ));
    assert_eq!(assess_patch(Untrusted, ReadOnly, false, true), Apply);
}

#[test]
fn writable_roots_refuse_outside_paths_git_dirs_and_symlink_escapes() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::create_dir(root_path.join(".git")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root_path.join("link")).unwrap();
    std::fs::create_dir(root_path.join("protected")).unwrap();
    let roots = WritableRoots::new(vec![root_path.clone()], vec![root_path.join("protected")]);

    assert!(roots.allows(&root_path.join("src/new.rs")));
    assert!(roots.allows(&root_path.join("a.txt")));
    assert!(!roots.allows(&outside.path().join("a.txt")));
    assert!(!roots.allows(&root_path.join(".git/config")));
    assert!(!roots.allows(&root_path.join("link/escaped.txt")));
    assert!(!roots.allows(&root_path.join("sub/../../escape.txt")));
    assert!(!roots.allows(Path::new("relative.txt")));
    assert!(!roots.allows(&root_path.join("protected/x")));
    assert!(!WritableRoots::default().allows(&root_path.join("a")));
}
