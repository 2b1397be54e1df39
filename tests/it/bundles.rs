//! Handovers of several files for several recipients: names made distinct once, the bytes stored
//! once however many recipients there are, a share and a token of their own per recipient, and
//! limits on the whole handover that refuse it before anything is kept.

use watasu::share::create::{CreateError, MAX_FILES, MAX_RECIPIENTS, create_handover};

use crate::{
    both_backends,
    cli_output::env_of,
    lifecycle::quiet_app,
    support::{Backend, TestApp, count, process::run_watasu_fed, texts},
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

/// `watasu share create` with its output: exit code, the lines it printed, standard error.
fn share_create(app: &TestApp, args: &[&str], input: &[u8]) -> (i32, Vec<String>, String) {
    let env = env_of(app);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = [&["share", "create", "--from", "sender@example.test"][..], args].concat();
    let (code, stdout, stderr) = tokio::task::block_in_place(|| run_watasu_fed(&args, &env, input));
    (code, stdout.lines().map(str::to_owned).collect(), stderr)
}

async fn the_command_line_hands_several_files_or_a_note_to_several_people_and_prints_each_link(backend: Backend) {
    let app = quiet_app(backend).await;
    app.create_sender("sender@example.test", "Sender Sato").await;
    let (a, b) = (app.data_dir.path().join("a.pdf"), app.data_dir.path().join("b.pdf"));
    std::fs::write(&a, b"a").unwrap();
    std::fs::write(&b, b"b").unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let to = ["--to", "one@example.test", "--to", "two@example.test"];

    let (code, lines, stderr) = share_create(&app, &[&to[..], &["--file", a, "--file", b]].concat(), b"");
    assert_eq!(code, 0, "{stderr}");
    let links = &lines[lines.len() - 2..];
    assert!(lines[..lines.len() - 2].iter().all(|line| !line.contains("/s/")), "{lines:?}");
    let shares: Vec<_> = {
        let mut resolved = Vec::new();
        for link in links {
            let token = link.rsplit("/s/").next().unwrap();
            resolved.push(app.state.shares.links.resolve(token).await.unwrap());
        }
        resolved
    };
    assert_eq!(
        shares.iter().map(|s| s.recipient_email.as_str()).collect::<Vec<_>>(),
        ["one@example.test", "two@example.test"]
    );
    assert_eq!(shares[0].handover_id, shares[1].handover_id);
    let files = texts(
        app.db(),
        "SELECT original_name FROM files WHERE handover_id = $1 ORDER BY position",
        shares[0].handover_id,
    );
    assert_eq!(files.await, ["a.pdf", "b.pdf"]);

    let (code, lines, stderr) =
        share_create(&app, &[&to[..], &["--note-stdin"]].concat(), "ドアの暗証番号 2468\n".as_bytes());
    assert_eq!(code, 0, "{stderr}");
    let token = lines.last().unwrap().rsplit("/s/").next().unwrap();
    let share = app.state.shares.links.resolve(token).await.unwrap();
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM handovers WHERE id = $1 AND has_note", share.handover_id).await,
        1
    );
    let sealed = app.state.shares.links.repo().sealed_note(share.id).await.unwrap().unwrap();
    assert_eq!(sealed.handover_id, share.handover_id);
    assert_eq!(crate::support::shares::note_seal().open(&sealed).unwrap().expose(), "ドアの暗証番号 2468");

    let env = env_of(&app);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, listed, stderr) =
        tokio::task::block_in_place(|| run_watasu_fed(&["share", "list", "--json"], &env, b""));
    assert_eq!(code, 0, "{stderr}");
    let listed: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    let summary: Vec<(i64, i64, bool)> = listed
        .iter()
        .map(|s| (s["handover_id"].as_i64().unwrap(), s["files"].as_i64().unwrap(), s["note"].as_bool().unwrap()))
        .collect();
    let (files_handover, note_handover) = (shares[0].handover_id, share.handover_id);
    assert_eq!(
        summary,
        [(note_handover, 0, true), (note_handover, 0, true), (files_handover, 2, false), (files_handover, 2, false)]
    );

    // A note and files at once, or neither, is refused with one clear line and nothing made.
    let (code, _, stderr) = share_create(&app, &["--to", "one@example.test", "--note", "x", "--file", a], b"");
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = share_create(&app, &["--to", "one@example.test"], b"");
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM handovers WHERE id > $1", 0).await, 2);
}

both_backends!(
    the_command_line_hands_several_files_or_a_note_to_several_people_and_prints_each_link,
    repeated_names_become_distinct_and_each_recipient_gets_a_share_of_the_same_stored_files,
    a_handover_over_a_limit_is_refused_whole_and_leaves_nothing,
);
