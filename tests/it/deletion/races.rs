//! Deletion cases against what runs at the same moment: two cases for the last two admins, a
//! second case for one account, an upload still arriving when its sender's case opens, a file that
//! turns up after its step, and the sign-in records kept under the account's address.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body::Frame;
use watasu::{
    accounts::{EmailAddress, Role, Users},
    deletion::{ActorRole, CaseState, Interrupted, OpenError, OpenRequest, Outcome, Store},
    share::create::{CreateError, create_handover},
};

use super::{assert_all_verified, fixtures::*, steps};
use crate::support::clock;
use crate::{
    both_backends,
    support::{Backend, TestApp, count},
};

const BOUNDARY: &str = "----watasu-race-upload";

fn admin_case(subject_id: i64) -> OpenRequest {
    OpenRequest { subject_id, actor_id: None, role: ActorRole::Admin, reapplies: None }
}

async fn create_admin_fast(app: &TestApp, email: &str) -> i64 {
    let email = EmailAddress::parse(email).unwrap();
    Users::new(app.db().clone())
        .create(&email, "Admin", "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$x", Role::Admin, Default::default())
        .await
        .unwrap()
}

/// The names in DATA_DIR/files.
fn files_on_disk(app: &TestApp) -> Vec<String> {
    std::fs::read_dir(app.data_dir.path().join("files"))
        .map(|dir| dir.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// A request body sent as the test hands over its pieces, so the test can act mid-upload.
struct ChannelBody(tokio::sync::mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

async fn two_cases_racing_for_the_last_two_admins_let_exactly_one_through(backend: Backend) {
    let app = deletion_app(backend).await;
    let mut survivor = create_admin_fast(&app, "admin-0@example.test").await;
    for round in 1..=20 {
        let newcomer = create_admin_fast(&app, &format!("admin-{round}@example.test")).await;
        let opens = [survivor, newcomer].map(|subject| {
            let runner = runner(&app, "held");
            tokio::spawn(async move { (subject, runner.open(&admin_case(subject)).await) })
        });
        let mut opened = Vec::new();
        let mut refused = Vec::new();
        for open in opens {
            match open.await.unwrap() {
                (subject, Ok(_)) => opened.push(subject),
                (subject, Err(OpenError::LastAdmin)) => refused.push(subject),
                (_, Err(other)) => panic!("round {round}: {other:?}"),
            }
        }
        assert_eq!((opened.len(), refused.len()), (1, 1), "round {round}: opened {opened:?}, refused {refused:?}");
        let active =
            count(app.db(), "SELECT count(*) FROM users WHERE role = 'admin' AND disabled_at IS NULL AND id > $1", 0)
                .await;
        assert_eq!(active, 1, "round {round}");
        survivor = refused[0];
    }
}

async fn a_second_case_for_the_same_account_is_refused_as_already_open(backend: Backend) {
    let app = deletion_app(backend).await;
    let subject = app.create_sender("leaving@example.test", "Sato").await;
    let held = runner(&app, "held");
    let first = held.open(&admin_case(subject)).await.unwrap();

    let second = held.open(&admin_case(subject)).await;

    assert!(matches!(second, Err(OpenError::AlreadyOpen)), "{second:?}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM deletion_cases WHERE subject_id = $1", subject).await, 1);
    assert_eq!(held.run_case(first.id).await.unwrap(), Some(CaseState::Completed));
}

async fn a_file_stored_for_a_sender_disabled_before_its_rows_leaves_no_share_no_file_and_no_mail(backend: Backend) {
    let app = deletion_app(backend).await;
    let sender = app.create_sender("leaving@example.test", "Sato").await;
    app.set_ago("users", &["disabled_at"], 0, &clock::id(sender)).await;
    let late = app.fake_share().file("late.txt", b"arrived after the account was disabled\n");
    let request = late.content_type("text/plain").message("").quiet().request(sender);

    let created = create_handover(&app.state.shares.links, app.state.store.as_ref(), request).await;

    assert!(matches!(created, Err(CreateError::SenderDisabled)), "{created:?}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE sender_id = $1", sender).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM files WHERE owner_id = $1", sender).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM mail_outbox WHERE id > $1", 0).await, 0);
    assert_eq!(files_on_disk(&app), Vec::<String>::new(), "the stored file was kept");
}

async fn an_upload_still_arriving_when_its_senders_case_opens_is_refused_with_a_page(backend: Backend) {
    let app = deletion_app(backend).await;
    let sender = app.create_sender_with_password("leaving@example.test", "Sato", PASSWORD).await;
    let browser = app.sign_in("leaving@example.test", PASSWORD).await;
    let csrf = browser.get("/shares/new").await.csrf_token();
    let (pieces, body) = tokio::sync::mpsc::channel::<Bytes>(4);
    let request = browser
        .client
        .post(browser.url("/shares/new"))
        .header("Sec-Fetch-Site", "same-origin")
        .header("Accept-Language", "en")
        .header("Content-Type", format!("multipart/form-data; boundary={BOUNDARY}"))
        .body(reqwest::Body::wrap(ChannelBody(body)));
    let upload = tokio::spawn(async move { crate::support::Page::read(request.send().await.unwrap()).await });
    let mut head = String::new();
    for (name, value) in
        [("csrf_token", csrf.as_str()), ("recipient", RECIPIENT), ("expires_in", "1d"), ("notify", "1")]
    {
        head.push_str(&format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"));
    }
    head.push_str(&format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{}\"\r\nContent-Type: text/plain\r\n\r\nthe first half, ",
        FILE_NAMES[0]
    ));
    pieces.send(Bytes::from(head)).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !files_on_disk(&app).iter().any(|name| name.starts_with(".tmp-")) {
        assert!(Instant::now() < deadline, "the upload never reached the store");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    runner(&app, "held")
        .open(&OpenRequest { subject_id: sender, actor_id: Some(sender), role: ActorRole::Own, reapplies: None })
        .await
        .unwrap();
    pieces.send(Bytes::from(format!("then the rest\r\n--{BOUNDARY}--\r\n"))).await.unwrap();
    drop(pieces);
    let answer = upload.await.unwrap();

    assert_eq!(answer.status, 403, "{}", answer.body);
    assert!(answer.texts("[role=alert]").iter().any(|t| t.contains("can no longer send files")), "{}", answer.body);
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE sender_id = $1", sender).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM files WHERE owner_id = $1", sender).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM mail_outbox WHERE id > $1", 0).await, 0, "a link was mailed");
    assert_eq!(files_on_disk(&app), Vec::<String>::new(), "the stored file was kept");
    assert!(app.smtp.messages().iter().all(|m| m.to != [RECIPIENT]));
}

async fn a_final_look_that_finds_a_stored_file_reopens_its_step_instead_of_completing(backend: Backend) {
    let app = deletion_app(backend).await;
    let subject = app.create_sender("leaving@example.test", "Sato").await;
    let case = runner(&app, "late").interrupt_after(Store::Backups).open(&admin_case(subject)).await.unwrap();
    let stopped = runner(&app, "late").interrupt_after(Store::Backups).run_case(case.id).await;
    assert!(stopped.is_err_and(|e| e.is::<Interrupted>()));
    // A file whose rows were written after the files step had looked (as a racing upload did).
    let stored = app.state.store.put(Box::pin(&b"a late file\n"[..]), u64::MAX).await.unwrap();
    const INSERT: &str = "INSERT INTO files (owner_id, storage_key, original_name, content_type, size_bytes, sha256)
                              VALUES ($1, $2, 'late.txt', 'text/plain', $3, $4)";
    watasu::on_db!(app.db(), |pool| {
        let insert = sqlx::query(INSERT).bind(subject).bind(&stored.key).bind(stored.size_bytes as i64);
        insert.bind(&stored.sha256).execute(pool).await.unwrap().rows_affected()
    });

    let resumed = runner(&app, "late").interrupt_after(Store::StoredFiles).run_case(case.id).await;

    let error = resumed.expect_err("the case completed with a file left on disk");
    assert!(error.downcast_ref::<Interrupted>().is_some_and(|i| i.0 == Store::StoredFiles), "{error:#}");
    assert_eq!(runner(&app, "late").run_case(case.id).await.unwrap(), Some(CaseState::Completed));
    assert!(!app.data_dir.path().join("files").join(&stored.key).exists(), "the late file outlived the case");
    assert_eq!(count(app.db(), "SELECT count(*) FROM files WHERE owner_id = $1", subject).await, 0);
    let files_step = steps(&app, case.id).await.into_iter().find(|s| s.store == "stored_files").unwrap();
    assert_eq!(files_step.outcome(), Outcome::Deleted, "{files_step:?}");
    assert_all_verified(&app, case.id).await;
}

async fn a_senders_failed_sign_ins_go_with_the_account(backend: Backend) {
    let app = deletion_app(backend).await;
    let subject = app.create_sender_with_password("leaving@example.test", "Sato", PASSWORD).await;
    let browser = app.browser();
    let form = browser.get("/login").await;
    for _ in 0..2 {
        let page = browser
            .post_form(
                "/login",
                &[("csrf_token", &form.csrf_token()), ("email", "leaving@example.test"), ("password", "a guess")],
            )
            .await;
        assert_eq!(page.status, 200);
    }
    const LOGIN_RECORDS: &str = "SELECT count(*) FROM rate_limit_hits WHERE bucket LIKE 'login:account:%' AND id > $1";
    assert_eq!(count(app.db(), LOGIN_RECORDS, 0).await, 2);
    let case = runner(&app, "held").open(&admin_case(subject)).await.unwrap();

    assert_eq!(runner(&app, "held").run_case(case.id).await.unwrap(), Some(CaseState::Completed));

    assert_eq!(count(app.db(), LOGIN_RECORDS, 0).await, 0, "the address is still in the sign-in records");
    let step = steps(&app, case.id).await.into_iter().find(|s| s.store == "rate_limits").unwrap();
    assert_eq!((step.outcome(), step.found), (Outcome::Deleted, Some(2)));
}

both_backends!(
    two_cases_racing_for_the_last_two_admins_let_exactly_one_through,
    a_second_case_for_the_same_account_is_refused_as_already_open,
    a_file_stored_for_a_sender_disabled_before_its_rows_leaves_no_share_no_file_and_no_mail,
    an_upload_still_arriving_when_its_senders_case_opens_is_refused_with_a_page,
    a_final_look_that_finds_a_stored_file_reopens_its_step_instead_of_completing,
    a_senders_failed_sign_ins_go_with_the_account
);
