//! What the deletion tests share: a sender with data in every store, an independent look at what
//! is left of them, a dump of every table, runners over the app's own database and disk, and a
//! file store that fails on demand.

use std::{
    io,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use watasu::{
    accounts::{EmailAddress, Role, invitations::Invitations},
    db::Db,
    deletion::{ActorRole, Case, CaseState, OpenRequest, RetryPolicy, Runner, journal::Journal},
    mail::outbox::{MailKind, Outbox},
    on_db,
    storage::{ResumableStore, StoreError},
};

use crate::support::{
    Browser, TestApp, TestShare,
    wrapped_store::{Call, Hook, Wrapped},
};

pub use crate::support::PASSWORD;
pub const RECIPIENT: &str = "client@example.test";
/// File names that must vanish with the sender (and never reach evidence or logs).
pub const FILE_NAMES: [&str; 2] = ["confidential-merger-plans.pdf", "年次報告書-極秘.txt"];

/// A sender with a session, two shares (one verified by its recipient: a code, a grant,
/// events), stored mails (one delivered), rate-limit records (a failed sign-in, a code request)
/// and an open invitation.
pub struct Sender {
    pub id: i64,
    pub email: String,
    pub browser: Browser,
    pub shares: Vec<TestShare>,
    pub storage_keys: Vec<String>,
    /// The storage key of the sender's unfinished resumable upload.
    pub upload_key: String,
}

pub async fn populate(app: &TestApp, email: &str) -> Sender {
    let id = app.create_sender_with_password(email, "Sender Sato", PASSWORD).await;
    let browser = app.sign_in(email, PASSWORD).await;
    // Then a mistyped password (a success would clear it): the sign-in limits keep a record
    // under the account's address.
    let mistyped = app.browser();
    let form = mistyped.get("/login").await;
    let refused = mistyped
        .post_form("/login", &[("csrf_token", &form.csrf_token()), ("email", email), ("password", "not it at all")])
        .await;
    assert_eq!(refused.status, 200, "{}", refused.body);
    let mut shares = Vec::new();
    for (name, content) in FILE_NAMES.iter().zip([&b"merger\n"[..], &b"report\n"[..]]) {
        shares.push(app.fake_share().sender(id).recipient(RECIPIENT).file(name, content).create().await);
    }
    // A handover of two files for two recipients: its files are stored, and must be deleted, once.
    let shared = app.fake_share().sender(id).recipient(RECIPIENT).recipient("partner@example.test");
    shares.extend(shared.file("shared-a.pdf", b"a\n").file("shared-b.pdf", b"b\n").create_all().await);
    verify_recipient(app, &shares[0]).await;
    let outbox = Outbox::new(app.db().clone(), &app.state.secret_key);
    let from: lettre::message::Mailbox = "watasu <watasu@example.test>".parse().unwrap();
    let note = |to: &str| {
        lettre::Message::builder().from(from.clone()).to(to.parse().unwrap()).subject("x").body("x".to_owned()).unwrap()
    };
    outbox.enqueue(Some(shares[0].id), MailKind::ShareNotification, &note(RECIPIENT)).await.unwrap();
    let receipt = outbox.enqueue(Some(shares[1].id), MailKind::DownloadReceipt, &note(email)).await.unwrap();
    outbox.mark_sent(receipt).await.unwrap();
    let invitee = EmailAddress::parse(&format!("invitee-{id}@example.test")).unwrap();
    Invitations::new(app.db().clone()).create(&invitee, Role::Sender, id, watasu::i18n::Lang::Ja).await.unwrap();
    let storage_keys = crate::support::texts(app.db(), "SELECT storage_key FROM files WHERE owner_id = $1", id).await;
    let upload_key = unfinished_upload(app, &browser, id).await;
    Sender { id, email: email.to_owned(), browser, shares, storage_keys, upload_key }
}

/// An unfinished resumable upload of the signed-in sender (a row and a partial file); its key.
async fn unfinished_upload(app: &TestApp, browser: &Browser, owner_id: i64) -> String {
    let csrf = browser.get("/shares/new").await.csrf_token();
    let created = browser
        .client
        .post(browser.url("/uploads"))
        .header("Tus-Resumable", "1.0.0")
        .header("X-CSRF-Token", csrf)
        .header("Sec-Fetch-Site", "same-origin")
        .header("Upload-Length", "10")
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    const SQL: &str = "SELECT storage_key FROM uploads WHERE owner_id = $1";
    on_db!(app.db(), |pool| sqlx::query_scalar(SQL).bind(owner_id).fetch_one(pool).await.unwrap())
}

/// The recipient's walk to a grant: a code, a grant, events and a per-share rate-limit record.
async fn verify_recipient(app: &TestApp, share: &TestShare) {
    let browser = app.browser();
    let before = app.smtp.messages().len();
    let landing = browser.get(&format!("/s/{}", share.token)).await;
    let asked = browser
        .post_form(&format!("/s/{}/email", share.token), &[("csrf_token", &landing.csrf_token()), ("email", RECIPIENT)])
        .await;
    let step = browser.follow(&share.token, asked).await;
    let code = app.smtp.code_for_after(RECIPIENT, before).await;
    let answer = browser
        .post_form(&format!("/s/{}/code", share.token), &[("csrf_token", &step.csrf_token()), ("code", &code)])
        .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
}

/// What is left of a sender, counted without the code under test: rows by their ids and
/// address, files on disk by their keys.
pub async fn leftovers(app: &TestApp, sender: &Sender) -> Vec<(&'static str, i64)> {
    leftovers_in(app.db(), &app.data_dir.path().join("files"), sender).await
}

/// The same, in any database and files folder (a restored backup).
pub async fn leftovers_in(db: &Db, files: &std::path::Path, sender: &Sender) -> Vec<(&'static str, i64)> {
    let mut left = Vec::new();
    let by_id: [(&'static str, &'static str); 6] = [
        ("users", "SELECT count(*) FROM users WHERE id = $1"),
        ("invitations", "SELECT count(*) FROM invitations WHERE invited_by = $1 AND used_at IS NULL"),
        ("sessions", "SELECT count(*) FROM sessions WHERE user_id = $1"),
        ("shares", "SELECT count(*) FROM shares WHERE sender_id = $1"),
        ("files", "SELECT count(*) FROM files WHERE owner_id = $1"),
        ("uploads", "SELECT count(*) FROM uploads WHERE owner_id = $1"),
    ];
    for (name, sql) in by_id {
        left.push((name, crate::support::count(db, sql, sender.id).await));
    }
    for share in &sender.shares {
        for (name, sql) in [
            ("otp_challenges", "SELECT count(*) FROM otp_challenges WHERE share_id = $1"),
            ("download_grants", "SELECT count(*) FROM download_grants WHERE share_id = $1"),
            ("share_events", "SELECT count(*) FROM share_events WHERE share_id = $1"),
            ("mail_outbox", "SELECT count(*) FROM mail_outbox WHERE share_id = $1"),
        ] {
            left.push((name, crate::support::count(db, sql, share.id).await));
        }
    }
    let dump = dump_all(db).await;
    left.push(("address anywhere", dump.matches(&sender.email).count() as i64));
    for key in &sender.storage_keys {
        left.push(("file on disk", files.join(key).exists() as i64));
    }
    left.push(("upload on disk", files.join(format!(".part-{}", sender.upload_key)).exists() as i64));
    left.retain(|(_, n)| *n > 0);
    left
}

/// Every row of every table, as text: what "nowhere in the database" is checked against.
pub async fn dump_all(db: &Db) -> String {
    dump_tables(db, None).await
}

/// The rows of the deletion tables only: the evidence.
pub async fn dump_evidence(db: &Db) -> String {
    dump_tables(db, Some(&["deletion_cases", "deletion_steps", "deletion_evidence"])).await
}

async fn dump_tables(db: &Db, only: Option<&[&str]>) -> String {
    let wanted = |table: &str| only.is_none_or(|only| only.contains(&table));
    let tables = crate::support::tables_as_text(db).await;
    tables.into_iter().filter(|(table, _)| wanted(table)).map(|(_, text)| text + "\n").collect()
}

/// A runner over the app's own database, disk and mail, like the app's, under a fixed name.
/// An app whose after-response GC stays out of the way. It would purge the shares a case has just
/// revoked, and record their "purged" events, while the test's runner works through the stores; the
/// runner copes (the events step's second look finds the late event and retries), but a retry
/// waits out the backoff, which these tests do not want to depend on.
pub async fn deletion_app(backend: crate::support::Backend) -> TestApp {
    TestApp::spawn_with(backend, |s| s.access_time_gc = false).await
}

pub fn runner(app: &TestApp, owner: &str) -> Runner {
    runner_with_store(app, owner, app.state.store.clone())
}

/// A runner over `store` that gives each step `max_attempts` tries, without waiting between them.
pub fn impatient_runner(app: &TestApp, owner: &str, store: Arc<dyn ResumableStore>, max_attempts: i32) -> Runner {
    let policy = RetryPolicy { base: Duration::ZERO, cap: Duration::ZERO, max_attempts, ..RetryPolicy::default() };
    runner_with_store(app, owner, store).with_policy(policy)
}

/// An admin's deletion case for the account `subject_id`, opened on `runner`.
pub async fn admin_case(runner: &Runner, subject_id: i64) -> Case {
    let request = OpenRequest { subject_id, actor_id: None, role: ActorRole::Admin, reapplies: None };
    runner.open(&request).await.unwrap()
}

pub fn runner_with_store(app: &TestApp, owner: &str, store: Arc<dyn ResumableStore>) -> Runner {
    let settings = &app.state.config.settings;
    Runner::new(
        app.db().clone(),
        store,
        app.state.mailer.clone(),
        app.state.config.mail_origin(),
        Journal::in_data_dir(&settings.data_dir),
    )
    .with_owner(owner)
}

/// Waits until the case with this reference is in `state` (the app's own runner works on it).
pub async fn wait_for_state(app: &TestApp, reference: &str, state: CaseState) {
    let cases = app.state.services.deletion.cases();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let case = cases.find_by_reference(reference).await.unwrap().expect("the case exists");
        if case.state() == state {
            return;
        }
        assert!(Instant::now() < deadline, "case {reference} is {:?}, not {state:?}", case.state());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The app's store, with deletes (or look-ups) that fail while switched on.
pub type FailingStore = Wrapped<dyn ResumableStore, Failures>;

/// The app's store with its deletes failing until the test switches them back.
pub fn store_failing_deletes(app: &TestApp) -> Arc<FailingStore> {
    let store = FailingStore::new(app.state.store.clone(), Failures::default());
    store.hook.fail_deletes.store(true, Ordering::SeqCst);
    store
}

/// The switches of a [`FailingStore`].
#[derive(Default)]
pub struct Failures {
    pub fail_deletes: AtomicBool,
    pub fail_lookups: AtomicBool,
}

#[async_trait::async_trait]
impl Hook for Failures {
    async fn before(&self, call: Call) -> Result<(), StoreError> {
        let failing = match call {
            Call::Open | Call::OpenRange => &self.fail_lookups,
            Call::Delete => &self.fail_deletes,
            _ => return Ok(()),
        };
        if failing.load(Ordering::SeqCst) {
            return Err(StoreError::Io(io::Error::other("the test store was told to fail")));
        }
        Ok(())
    }
}
