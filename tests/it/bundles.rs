//! Handovers of several files for several recipients: names made distinct once, the bytes stored
//! once however many recipients there are, a share and a token of their own per recipient, and
//! limits on the whole handover that refuse it before anything is kept.

use watasu::share::create::{CreateError, MAX_FILES, MAX_RECIPIENTS, create_handover};

use crate::{
    both_backends,
    support::{Backend, TestApp, count, texts},
};

fn files_in_store(app: &TestApp) -> usize {
    std::fs::read_dir(app.data_dir.path().join("files")).map_or(0, |dir| dir.count())
}

async fn repeated_names_become_distinct_and_each_recipient_gets_a_share_of_the_same_stored_files(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let shares = app
        .fake_share()
        .file("A.pdf", b"first")
        .file("A.pdf", b"second")
        .file("a.pdf", b"third")
        .file("notes.txt", b"fourth")
        .recipient("one@example.test")
        .recipient("two@example.test")
        .create_all()
        .await;

    assert_eq!(shares.len(), 2);
    let handover = count(app.db(), "SELECT handover_id FROM shares WHERE id = $1", shares[0].id).await;
    assert_eq!(count(app.db(), "SELECT handover_id FROM shares WHERE id = $1", shares[1].id).await, handover);
    let names =
        texts(app.db(), "SELECT original_name FROM files WHERE handover_id = $1 ORDER BY position", handover).await;
    assert_eq!(names, ["A.pdf", "A (2).pdf", "a (3).pdf", "notes.txt"]);
    assert_eq!(files_in_store(&app), 4, "each file is stored once for both recipients");
    assert_ne!(shares[0].token, shares[1].token);
    for (share, recipient) in shares.iter().zip(["one@example.test", "two@example.test"]) {
        let resolved = app.state.shares.links.resolve(&share.token).await.unwrap();
        assert_eq!((resolved.id, resolved.recipient_email.as_str()), (share.id, recipient));
    }
}

async fn a_handover_over_a_limit_is_refused_whole_and_leaves_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    let create = async |request| create_handover(&app.state.shares.links, app.state.store.as_ref(), request).await;
    let two_files = app.fake_share().sender(sender).file("a.txt", b"12345").file("b.txt", b"67890");

    let mut over = two_files.request(sender);
    over.max_bytes = 9;
    let refused = create(over).await;
    assert!(matches!(refused, Err(CreateError::TooLarge { limit: 9 })), "{refused:?}");

    let names: Vec<String> = (0..=MAX_FILES).map(|i| format!("{i}.txt")).collect();
    let many_files = names.iter().fold(app.fake_share().sender(sender), |share, name| share.file(name, b"x"));
    let refused = create(many_files.request(sender)).await;
    assert!(matches!(refused, Err(CreateError::FileCount)), "{refused:?}");

    let addresses: Vec<String> = (0..=MAX_RECIPIENTS).map(|i| format!("r{i}@example.test")).collect();
    let many_people = addresses.iter().fold(app.fake_share().sender(sender), |share, to| share.recipient(to));
    let refused = create(many_people.request(sender)).await;
    assert!(matches!(refused, Err(CreateError::RecipientCount)), "{refused:?}");

    for table in
        ["SELECT count(*) FROM handovers WHERE sender_id = $1", "SELECT count(*) FROM files WHERE owner_id = $1"]
    {
        assert_eq!(count(app.db(), table, sender).await, 0, "{table}");
    }
    assert_eq!(files_in_store(&app), 0, "a refused handover kept a file");

    // The limits themselves are allowed.
    let mut at_limit = two_files.request(sender);
    at_limit.max_bytes = 10;
    assert_eq!(create(at_limit).await.unwrap().len(), 1);
    let most =
        addresses[..MAX_RECIPIENTS].iter().fold(app.fake_share().sender(sender), |share, to| share.recipient(to));
    assert_eq!(create(most.request(sender)).await.unwrap().len(), MAX_RECIPIENTS);
}

both_backends!(
    repeated_names_become_distinct_and_each_recipient_gets_a_share_of_the_same_stored_files,
    a_handover_over_a_limit_is_refused_whole_and_leaves_nothing,
);
