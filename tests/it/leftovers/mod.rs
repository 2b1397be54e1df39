//! The leftover sweep, on the local store (`::local`) and on a real S3-compatible server (`::s3`,
//! s3s-fs), each on both databases: it looks at everything the store holds, however many live
//! files come before the leftovers, in batches of bounded size, and leaves the young alone.
//! Leftovers are aged by setting the mtimes of the files that hold them: the local store's own,
//! or those of s3s-fs's folder, whose mtimes are the objects' `last_modified`.

mod killed_patch;
mod ledger;
mod multipart;

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, SystemTime},
};

use object_store::{ObjectStore, PutPayload, aws::AmazonS3, path::Path as ObjectPath};
use watasu::{
    lifecycle::{LeftoverReport, ShareGc},
    maintenance::Trigger,
    share::ShareEvents,
    storage::{SweptStore, store::TEMP_PREFIX},
};

use crate::{
    lifecycle::{quiet_app, text},
    support::{TestApp, s3},
};

const HOUR: Duration = Duration::from_secs(3600);

/// Which store a behaviour runs on.
#[derive(Clone, Copy)]
pub(crate) enum Where {
    Local,
    S3,
}

/// The sweep on one store, beside the app whose database it checks names against.
struct Subject {
    gc: ShareGc,
    /// The folder whose files hold the store's bytes (for the object store, under its prefix).
    files: PathBuf,
    /// The object store's bucket, written through S3 like any client would.
    objects: Option<AmazonS3>,
}

impl Subject {
    fn on(app: &TestApp, place: Where) -> Self {
        match place {
            Where::Local => Self { gc: app.state.services.gc.gc().clone(), files: local_files(app), objects: None },
            Where::S3 => {
                let server = s3::shared();
                let (store, bucket) = server.store();
                let objects = server.builder().with_bucket_name(&bucket).build().unwrap();
                let store: Arc<dyn SweptStore> = Arc::new(store);
                let gc = ShareGc::new(app.state.lifecycle.clone(), store, ShareEvents::new(app.db().clone()));
                Self { gc, files: server.bucket_dir(&bucket).join("files"), objects: Some(objects) }
            }
        }
    }

    /// Stores `bytes` under `name` (a path below the store's folder or prefix).
    async fn place(&self, name: &str, bytes: &'static [u8]) {
        match &self.objects {
            None => std::fs::write(self.files.join(name), bytes).unwrap(),
            Some(objects) => {
                objects.put(&ObjectPath::from(format!("files/{name}")), PutPayload::from_static(bytes)).await.unwrap();
            }
        }
    }

    /// The live files of the app's shares, in this store too (the app itself writes to its local one).
    async fn adopt(&self, app: &TestApp) {
        if self.objects.is_some() {
            for key in names(&local_files(app)) {
                self.place(&key, b"live").await;
            }
        }
    }

    /// A resumable upload's partial bytes for `key`, as this store keeps them: one `.part-` file,
    /// or pieces under a `.part-` prefix. Returns their names.
    async fn place_partial(&self, key: &str) -> Vec<String> {
        let names = match self.objects {
            None => vec![format!(".part-{key}")],
            Some(_) => vec![format!(".part-{key}/0-{}", token(8)), format!(".part-{key}/5-{}", token(8))],
        };
        for name in &names {
            self.place(name, b"piece").await;
        }
        names
    }

    /// `count` temp files of interrupted uploads; the object store writes none (its unfinished
    /// uploads are multipart uploads, see `multipart`).
    async fn place_temps(&self, count: usize) -> usize {
        if self.objects.is_some() {
            return 0;
        }
        for _ in 0..count {
            self.place(&format!("{TEMP_PREFIX}{}", token(64)), b"half an upload").await;
        }
        count
    }

    fn names(&self) -> BTreeSet<String> {
        names(&self.files)
    }

    fn set_modified(&self, name: &str, at: SystemTime) {
        std::fs::File::options().write(true).open(self.files.join(name)).unwrap().set_modified(at).unwrap();
    }
}

fn local_files(app: &TestApp) -> PathBuf {
    app.data_dir.path().join("files")
}

/// Every file below `dir`, as paths relative to it.
fn names(dir: &Path) -> BTreeSet<String> {
    fn walk(dir: &Path, base: &Path, found: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            if entry.path().is_dir() {
                walk(&entry.path(), base, found);
            } else {
                found.insert(entry.path().strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut found = BTreeSet::new();
    walk(dir, dir, &mut found);
    found
}

fn token(len: usize) -> String {
    watasu::secret::random_token().expose()[..len].to_owned()
}

/// Runs each behaviour on both stores, each on both databases.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            async fn local(backend: crate::support::Backend) {
                crate::leftovers::$name(backend, crate::leftovers::Where::Local).await
            }
            async fn s3(backend: crate::support::Backend) {
                crate::leftovers::$name(backend, crate::leftovers::Where::S3).await
            }
            crate::both_backends!(local, s3);
        }
    )*};
}

on_both_stores!(
    the_leftover_sweep_reaches_leftovers_behind_more_live_files_than_its_batch,
    leftovers_younger_than_an_hour_stay,
    a_purged_shares_file_that_comes_back_is_a_leftover,
);

async fn the_leftover_sweep_reaches_leftovers_behind_more_live_files_than_its_batch(
    backend: crate::support::Backend,
    place: Where,
) {
    let app = quiet_app(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    for _ in 0..40 {
        app.fake_share().sender(sender).file("live.txt", b"live\n").create().await;
    }
    let subject = Subject::on(&app, place);
    subject.adopt(&app).await;
    // A partial upload whose key a row names is not a leftover, however old.
    let named = subject.names().into_iter().next().unwrap();
    let named_partial = subject.place_partial(&named).await;
    let live = subject.names();
    assert_eq!(live.len(), 40 + named_partial.len());
    for _ in 0..5 {
        subject.place(&token(64), b"no row names me").await;
    }
    for _ in 0..3 {
        subject.place_partial(&token(64)).await;
    }
    let temps = subject.place_temps(3).await;
    // Everything is old enough: only whether a row names it decides.
    let old = SystemTime::now() - 2 * HOUR;
    for name in subject.names() {
        subject.set_modified(&name, old);
    }

    let report = subject.gc.remove_leftovers_in_batches(5).await.unwrap();

    let temp_files = temps as u32;
    assert_eq!(report, LeftoverReport { temp_files, orphan_files: 8, multipart_uploads: 0, failed: 0 });
    assert_eq!(subject.names(), live, "exactly the live files are left");
}

async fn leftovers_younger_than_an_hour_stay(backend: crate::support::Backend, place: Where) {
    let app = quiet_app(backend).await;
    let subject = Subject::on(&app, place);
    let young = token(64);
    subject.place(&young, b"an upload may be about to name me").await;
    let fifty_nine_minutes_ago = SystemTime::now() - Duration::from_secs(59 * 60);
    // Still being written: its newest bytes are younger than an hour, however old the first are.
    let partial = subject.place_partial(&token(64)).await;
    subject.set_modified(&partial[0], SystemTime::now() - 2 * HOUR);
    subject.set_modified(partial.last().unwrap(), fifty_nine_minutes_ago);
    if subject.place_temps(1).await == 1 {
        let temp = subject.names().into_iter().find(|n| n.starts_with(TEMP_PREFIX)).unwrap();
        subject.set_modified(&temp, fifty_nine_minutes_ago);
    }
    let before = subject.names();

    let report = subject.gc.remove_leftovers_in_batches(5).await.unwrap();

    assert_eq!(report, LeftoverReport::default());
    assert_eq!(subject.names(), before, "young leftovers are left");
}

async fn a_purged_shares_file_that_comes_back_is_a_leftover(backend: crate::support::Backend, place: Where) {
    let app = quiet_app(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    let kept = app.fake_share().sender(sender).file("kept.txt", b"kept\n").create().await;
    let gone = app.fake_share().sender(sender).file("gone.txt", b"gone\n").create().await;
    let key_of = async |share_id| {
        let sql = "SELECT f.storage_key FROM shares s JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1";
        text(app.db(), sql, share_id).await
    };
    let (kept_key, gone_key) = (key_of(kept.id).await, key_of(gone.id).await);
    let subject = Subject::on(&app, place);
    subject.adopt(&app).await;
    app.expire_share(gone.id).await;
    assert_eq!(app.state.services.gc.gc().collect(5, Trigger::Cli).await.unwrap().purged, 1);
    // The file comes back after its share was purged (a bucket or folder restored from a backup;
    // in the bucket, the copy the app's own collection never saw).
    if !subject.names().contains(&gone_key) {
        subject.place(&gone_key, b"restored").await;
    }
    let old = SystemTime::now() - 2 * HOUR;
    for name in subject.names() {
        subject.set_modified(&name, old);
    }

    let report = subject.gc.remove_leftovers_in_batches(5).await.unwrap();

    assert_eq!(report, LeftoverReport { orphan_files: 1, ..LeftoverReport::default() });
    assert_eq!(subject.names(), BTreeSet::from([kept_key]), "only the live share's file is left");
}
