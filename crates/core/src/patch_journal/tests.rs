use super::*;

const THREAD: &str = "0190a000-0000-7000-8000-000000000001";

/// What a kill between creating a journal's first version and writing it leaves: an empty
/// `.tmp` beside where the journal was to be.
fn torn_first_write(journal: &JournalFile) -> PathBuf {
    std::fs::create_dir_all(journal.path.parent().unwrap()).unwrap();
    let mut torn = journal.path.as_os_str().to_owned();
    torn.push(".tmp");
    let torn = PathBuf::from(torn);
    std::fs::write(&torn, b"").unwrap();
    torn
}

#[test]
fn a_journal_torn_before_its_first_write_still_names_its_call() {
    let home = tempfile::tempdir().unwrap();
    let journal = journal_for(home.path(), THREAD, "turn-1", "call_Ab9.x");
    let torn = torn_first_write(&journal);

    let recovered = recover_thread_patches(home.path(), THREAD);
    assert_eq!(
        recovered,
        vec![RecoveredPatch {
            call_id: Some("call_Ab9.x".into()),
            report: NOT_STARTED.into(),
        }]
    );
    assert!(!torn.exists());
    assert!(threads_with_patch_journals(home.path()).is_empty());
}

#[test]
fn a_hostile_call_id_never_shapes_the_journal_path() {
    let home = tempfile::tempdir().unwrap();
    for call in ["../../../escape", "a/b\n.json", "call\0nul", "é.tmp.json"] {
        let journal = journal_for(home.path(), THREAD, "turn-1", call);
        assert_eq!(
            journal.path.parent(),
            Some(journal_dir(home.path()).as_path())
        );
        let name = journal.path.file_name().unwrap().to_str().unwrap();
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b'-' || b == b'.' || b.is_ascii_lowercase()),
            "{name}"
        );
        torn_first_write(&journal);
        let recovered = recover_thread_patches(home.path(), THREAD);
        assert_eq!(recovered.len(), 1);
        assert_eq!(recovered[0].call_id.as_deref(), Some(call));
    }
}

#[test]
fn a_call_id_too_long_for_a_name_is_left_out_of_it() {
    let home = tempfile::tempdir().unwrap();
    let long = "c".repeat(MAX_NAMED_CALL_ID + 1);
    let journal = journal_for(home.path(), THREAD, "turn-1", &long);
    let name = journal.path.file_name().unwrap().to_str().unwrap();
    assert!(name.len() < 255 && !name.contains("636363"), "{name}");
    torn_first_write(&journal);
    let recovered = recover_thread_patches(home.path(), THREAD);
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].call_id, None);
    assert_eq!(recovered[0].report, NOT_STARTED);

    let longest = "c".repeat(MAX_NAMED_CALL_ID);
    let journal = journal_for(home.path(), THREAD, "turn-1", &longest);
    assert!(journal.path.file_name().unwrap().len() < 255);
}
