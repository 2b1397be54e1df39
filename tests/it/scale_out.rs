//! Two `watasu serve` processes behind one nginx (round robin), sharing one PostgreSQL, one bucket
//! and one WATASU_SECRET_KEY, each with a data folder of its own, as two hosts would run them.
//! PostgreSQL only: a SQLite file cannot be shared by two hosts, so scale-out is PostgreSQL's.

use std::time::Duration;

use object_store::{ObjectStore, path::Path as ObjectPath};
use watasu::{db::Db, session::Sessions, share::ShareAccess};

use crate::support::{
    Backend, Browser, RECIPIENT,
    installation::Installation,
    nginx::Nginx,
    process::{Server, free_local_addr},
    s3::{S3Server, shared},
};
use watasu::db::Sql;

struct Pair {
    install: Installation,
    nginx: Nginx,
    _servers: [Server; 2],
    _second_dir: tempfile::TempDir,
    bucket: String,
    /// The S3 server of this pair alone, when it has one.
    _own_store: Option<S3Server>,
}

impl Pair {
    async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// The pair with `more` settings for both instances.
    async fn start_with(more: &[&str]) -> Self {
        Self::start_on(None, more).await
    }

    /// The pair on an S3 server of its own, with `more` settings: the other tests' transfers
    /// through the shared server cannot then make it answer later than its retry budget allows.
    async fn start_on_own_store(more: &[&str]) -> Self {
        Self::start_on(Some(S3Server::start()), more).await
    }

    async fn start_on(own_store: Option<S3Server>, more: &[&str]) -> Self {
        let install = Installation::new(Backend::Postgres).await;
        let s3 = own_store.as_ref().unwrap_or_else(|| shared());
        let bucket = s3.create_bucket();
        let (a, b) = (free_local_addr(), free_local_addr());
        let nginx = Nginx::start_balancing(&[&a, &b], "100m");
        let mut extra = s3.serve_args(&bucket);
        // As the README sets it up: nginx is the trusted proxy, limiting each client in front.
        extra.extend([
            "--base-url".to_owned(),
            nginx.base(),
            "--trusted-proxies".to_owned(),
            "127.0.0.1/32".to_owned(),
        ]);
        extra.extend(more.iter().map(|s| (*s).to_owned()));
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let second_dir = tempfile::tempdir().unwrap();
        let servers = [install.start_on(&a, &extra), install.start_instance(&b, second_dir.path(), &extra)];
        Self { install, nginx, _servers: servers, _second_dir: second_dir, bucket, _own_store: own_store }
    }

    fn browser(&self) -> Browser {
        Browser::new(&self.nginx.base())
    }

    /// The instance that answered each request nginx passed on, with its method and path.
    fn served(&self) -> Vec<(String, String, String)> {
        self.nginx
            .access_log()
            .lines()
            .map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                (fields[0].to_owned(), fields[1].to_owned(), fields[4].to_owned())
            })
            .collect()
    }

    /// The instance that answered the `nth` request (from 1) to `path` with `method`. nginx logs a
    /// request just after its answer went out, so the line may take a moment: counting, not
    /// taking the last line, keeps an earlier request's line from standing in for it.
    async fn server_of(&self, method: &str, path: &str, nth: usize) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let served = self.served();
            if let Some(found) = served.iter().filter(|(m, p, _)| m == method && p == path).nth(nth - 1) {
                return found.2.clone();
            }
            assert!(std::time::Instant::now() < deadline, "nginx passed on no {method} {path} #{nth}: {served:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Makes nginx send the next request to the other instance than `not`: cheap requests until
    /// one lands on `not`, whose turn it then was.
    async fn next_request_avoids(&self, not: &str) {
        loop {
            let probes = self.served().iter().filter(|(_, p, _)| p == "/healthz").count();
            assert_eq!(self.browser().get("/healthz").await.status, 200);
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            let landed = loop {
                let served: Vec<_> = self.served().into_iter().filter(|(_, p, _)| p == "/healthz").collect();
                if served.len() > probes {
                    break served[probes].2.clone();
                }
                assert!(std::time::Instant::now() < deadline, "nginx never logged the probe");
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            if landed == not {
                return;
            }
        }
    }

    /// A sender signs in through nginx and posts the new-share form; answers the link's token.
    async fn share_through_the_form(&self, content: &[u8]) -> String {
        let password = self.install.add_sender("sato@example.test");
        let sender = self.browser();
        assert_eq!(sender.sign_in("sato@example.test", &password).await.status, 303);
        let csrf = sender.get("/shares/new").await.csrf_token();
        let page = sender.post_new_share(Some(&csrf), RECIPIENT, "report.txt", content.to_vec()).await;
        assert_eq!(page.status, 303, "{}", page.body);
        let page = page.follow_created(&sender.client, &sender.base).await;
        let link = page.attr("#share-link", "value").expect("the link is shown");
        link.rsplit('/').next().unwrap().to_owned()
    }

    /// A browser through nginx whose session holds a grant for the share, and its CSRF token.
    async fn granted_browser(&self, token: &str) -> (Browser, String) {
        let db = self.install.db.clone();
        let sessions = Sessions::new(db.clone(), Duration::from_secs(3600), Duration::from_secs(7200));
        let access = ShareAccess::over(db, Duration::from_secs(1800));
        let share = access.open(token).await.unwrap();
        let created = sessions.create().await.unwrap();
        access.grants.grant(created.session.id, share.id).await.unwrap();
        let browser = self.browser();
        browser.set_cookie("watasu_session", created.cookie_value.expose());
        (browser, created.session.csrf_secret)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_share_made_through_one_instance_is_verified_and_downloaded_once_through_the_other() {
    let pair = Pair::start().await;
    let token = pair.share_through_the_form(b"the file contents\n").await;
    let creator = pair.server_of("POST", "/shares/new", 1).await;

    let recipient = pair.browser();
    let before = pair.install.smtp.messages().len();
    let code_step = recipient.ask_for_code(&token, RECIPIENT).await;
    assert_eq!(code_step.status, 200, "{}", code_step.body);
    let code = pair.install.smtp.code_for_after(RECIPIENT, before).await;
    pair.next_request_avoids(&creator).await;
    let verified = recipient.submit_code(&token, &code_step.csrf_token(), &code).await;
    assert_eq!(verified.status, 303, "{}", verified.body);
    let path = format!("/s/{token}/code");
    let verifier = pair.server_of("POST", &path, 1).await;
    assert_ne!(verifier, creator, "{:?}", pair.served());

    let page = recipient.open_link(&token).await;
    let csrf = page.csrf_token();
    pair.next_request_avoids(&creator).await;
    let claim = recipient.claim(&token, &csrf).await;
    assert_eq!(claim.status(), 303);
    assert_ne!(pair.server_of("POST", &format!("/s/{token}/download"), 1).await, creator);
    let file = recipient.fetch_file(&token, &[]).await;
    assert_eq!(file.status(), 200);
    assert_eq!(file.bytes().await.unwrap().as_ref(), b"the file contents\n");

    let (other, other_csrf) = pair.granted_browser(&token).await;
    assert_eq!(other.download(&token, &other_csrf).await.status(), 410);
    let downloads = crate::support::count(
        &pair.install.db,
        "SELECT COUNT(*) FROM share_events e JOIN shares s ON s.id = e.share_id WHERE e.kind = 'downloaded' AND s.id = $1",
        ShareAccess::over(pair.install.db.clone(), Duration::from_secs(1800)).open(&token).await.unwrap().id,
    )
    .await;
    assert_eq!(downloads, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_simultaneous_download_posts_over_both_instances_give_one_file() {
    // Two hundred requests at once wait for a database connection longer than the usual 3 s on a
    // busy machine; the race, not the pool, is what is tested.
    let pair = Pair::start_on_own_store(&["--db-timeout", "60s"]).await;
    let token = pair.share_through_the_form(b"the file contents\n").await;
    let mut browsers = Vec::new();
    for _ in 0..200 {
        browsers.push(pair.granted_browser(&token).await);
    }
    let answers =
        futures_util::future::join_all(browsers.iter().map(|(browser, csrf)| browser.download(&token, csrf))).await;
    let mut statuses: Vec<u16> = answers.iter().map(|a| a.status().as_u16()).collect();
    statuses.sort_unstable();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 410).count(), 199, "{statuses:?}");
    let path = format!("/s/{token}/download");
    let instances: std::collections::BTreeSet<String> =
        pair.served().into_iter().filter(|(m, p, _)| m == "POST" && *p == path).map(|(_, _, i)| i).collect();
    assert_eq!(instances.len(), 2, "the posts did not reach both instances: {instances:?}");
}

/// The share's id and its file's storage key.
async fn share_and_key(pair: &Pair, token: &str) -> (i64, String) {
    let id = ShareAccess::over(pair.install.db.clone(), Duration::from_secs(1800)).open(token).await.unwrap().id;
    let Db::Postgres(pool) = &pair.install.db else { unreachable!("scale-out runs on PostgreSQL") };
    let key = sqlx::query_scalar(
        "SELECT f.storage_key FROM files f JOIN shares s ON s.handover_id = f.handover_id WHERE s.id = $1",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .unwrap();
    (id, key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_download_cut_off_on_one_instance_resumes_on_the_other() {
    let pair = Pair::start().await;
    let content: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let token = pair.share_through_the_form(&content).await;
    let (browser, csrf) = pair.granted_browser(&token).await;
    assert_eq!(browser.claim(&token, &csrf).await.status(), 303);

    let path = format!("/s/{token}/file");
    let first = browser.fetch_file(&token, &[("Range", "bytes=0-39999")]).await;
    assert_eq!(first.status(), 206);
    let mut received = first.bytes().await.unwrap().to_vec();
    let first_server = pair.server_of("GET", &path, 1).await;
    pair.next_request_avoids(&first_server).await;
    let rest = browser.fetch_file(&token, &[("Range", "bytes=40000-")]).await;
    assert_eq!(rest.status(), 206);
    received.extend_from_slice(&rest.bytes().await.unwrap());
    assert_ne!(pair.server_of("GET", &path, 2).await, first_server, "{:?}", pair.served());
    assert_eq!(received, content);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_gc_of_both_instances_removes_an_expired_share_s_object_once() {
    let pair = Pair::start_with(&["--gc-interval", "1s"]).await;
    let token = pair.share_through_the_form(b"the file contents\n").await;
    let (share_id, key) = share_and_key(&pair, &token).await;
    let objects = shared().builder().with_bucket_name(&pair.bucket).build().unwrap();
    let object = ObjectPath::from(format!("files/{key}"));
    objects.head(&object).await.expect("the object is stored");

    let expire = "UPDATE shares SET expires_at = now() - interval '1 second' WHERE id = $1";
    assert_eq!(crate::support::execute(&pair.install.db, Sql::same(expire), share_id).await, 1);
    let purged = "SELECT COUNT(*) FROM share_events WHERE kind = 'purged' AND share_id = $1";
    crate::support::eventually(Duration::from_secs(30), "the purge", async || {
        crate::support::count(&pair.install.db, purged, share_id).await == 1
    })
    .await;
    assert!(matches!(objects.head(&object).await, Err(object_store::Error::NotFound { .. })));
    // The purge is recorded once, however both timers raced for it.
    assert_eq!(crate::support::count(&pair.install.db, purged, share_id).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tus_upload_whose_patches_alternate_between_the_instances_completes() {
    let pair = Pair::start().await;
    let password = pair.install.add_sender("tus@example.test");
    let browser = pair.browser();
    assert_eq!(browser.sign_in("tus@example.test", &password).await.status, 303);
    let csrf = browser.get("/shares/new").await.csrf_token();
    let tus = crate::uploads::Tus { browser, csrf };
    // Three PATCHes of uneven sizes, none a multiple of S3's part size, the middle one under 5 MiB.
    let content = crate::uploads::pattern(9 * 1024 * 1024 + 12_345);
    let cuts = [0, 6 * 1024 * 1024 + 7, 6 * 1024 * 1024 + 700_000, content.len()];
    let path = tus.create(content.len() as u64).await;

    let mut instances: Vec<String> = Vec::new();
    for window in cuts.windows(2) {
        if let Some(last) = instances.last() {
            pair.next_request_avoids(last).await;
        }
        let page = tus.patch(&path, window[0] as u64, &content[window[0]..window[1]]).await;
        assert_eq!(page.status, 204, "{}", page.body);
        assert_eq!(page.header("upload-offset"), Some(window[1].to_string().as_str()));
        instances.push(pair.server_of("PATCH", &path, instances.len() + 1).await);
    }

    assert!(instances.windows(2).all(|w| w[0] != w[1]), "the PATCHes did not alternate: {instances:?}");
    let id = crate::uploads::id_of(&path).to_owned();
    let Db::Postgres(pool) = &pair.install.db else { unreachable!("scale-out runs on PostgreSQL") };
    let sha: String =
        sqlx::query_scalar("SELECT sha256 FROM uploads WHERE public_id = $1").bind(&id).fetch_one(pool).await.unwrap();
    assert_eq!(sha, crate::uploads::sha256_hex(&content));
    let objects = crate::file_stores::count_files(&shared().bucket_dir(&pair.bucket));
    assert_eq!(objects, 1, "only the joined file is left in the bucket, no pieces");
}
