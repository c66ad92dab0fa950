//! Error objects: kinds, messages, backtraces, cause chains, and the per-thread slot.

use pactum::{Error, ErrorKind};

#[test]
fn errors_carry_kind_message_and_cause() {
    let cause = Error::new(ErrorKind::KEY_ERROR, "inner");
    let error = Error::caused_by(ErrorKind::RUNTIME_ERROR, "outer", cause.clone());
    assert_eq!(error.to_string(), "RuntimeError: outer");
    let found = error.cause().expect("cause");
    assert_eq!(found.message(), "inner");
    assert_eq!(
        cause.as_object_ref().strong_count(),
        3,
        "ours, the chain's, and `found`"
    );
    drop(found);
    drop(error);
    assert_eq!(cause.as_object_ref().strong_count(), 1);
}

#[test]
fn backtraces_can_be_appended_and_replaced() {
    let error = Error::new(ErrorKind::VALUE_ERROR, "bad");
    let first = error.backtrace();
    assert!(first.contains("errors.rs"), "{first}");
    error.update_backtrace("  File \"extra.py\", line 1, in <module>\n", true);
    assert!(error.backtrace().starts_with(&first) && error.backtrace().ends_with("<module>\n"));
    error.update_backtrace("replaced\n", false);
    assert_eq!(error.backtrace(), "replaced\n");
}

#[test]
fn the_raised_slot_is_per_thread() {
    Error::new(ErrorKind::INDEX_ERROR, "main thread").set_raised();
    std::thread::spawn(|| {
        assert!(
            Error::take_raised().is_none(),
            "other threads do not see it"
        )
    })
    .join()
    .unwrap();
    let taken = Error::take_raised().expect("still raised here");
    assert_eq!(taken.message(), "main thread");
    assert!(Error::take_raised().is_none(), "taking clears the slot");
}

#[test]
fn std_errors_convert_with_sensible_kinds() {
    let parse: Error = "x".parse::<i32>().unwrap_err().into();
    assert_eq!(parse.kind(), "ValueError");
    let io: Error = std::io::Error::other("disk gone").into();
    assert_eq!(
        (io.kind().as_ref(), io.message().as_ref()),
        ("RuntimeError", "disk gone")
    );
}
