//! The leftover sweep of the local store walks the whole folder, however many live files come
//! before the leftovers, in batches of bounded size.

use std::{
    collections::BTreeSet,
    time::{Duration, SystemTime},
};

use watasu::lifecycle::{LeftoverReport, store::TEMP_PREFIX};

use crate::{both_backends, lifecycle::quiet_app};

const HOUR: Duration = Duration::from_secs(3600);

fn names(dir: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

both_backends! {
    async fn the_leftover_sweep_reaches_leftovers_behind_more_live_files_than_its_batch(backend: Backend) {
        let app = quiet_app(backend).await;
        let sender = app.create_sender("sender@example.test", "Sender Sato").await;
        let files = app.data_dir.path().join("files");
        for _ in 0..40 {
            app.create_share_with(sender, "recipient@example.test", "live.txt", b"live\n", HOUR).await;
        }
        let live = names(&files);
        assert_eq!(live.len(), 40);
        let orphans: Vec<String> = (0..5).map(|_| watasu::secret::random_token().expose().to_owned()).collect();
        for name in &orphans {
            std::fs::write(files.join(name), b"no row names me").unwrap();
        }
        for _ in 0..3 {
            let name = format!("{TEMP_PREFIX}{}", watasu::secret::random_token().expose());
            std::fs::write(files.join(name), b"half an upload").unwrap();
        }
        // Everything is old enough: only whether a row names it decides.
        let old = SystemTime::now() - 2 * HOUR;
        for name in names(&files) {
            std::fs::File::options().write(true).open(files.join(name)).unwrap().set_modified(old).unwrap();
        }

        let report = app.state.gc.gc().remove_leftovers_in_batches(&files, 5).await.unwrap();

        assert_eq!(report, LeftoverReport { temp_files: 3, orphan_files: 5 });
        assert_eq!(names(&files), live, "exactly the live files are left");
    }

    async fn leftovers_younger_than_an_hour_stay(backend: Backend) {
        let app = quiet_app(backend).await;
        let files = app.data_dir.path().join("files");
        let young = watasu::secret::random_token().expose().to_owned();
        std::fs::write(files.join(&young), b"an upload may be about to name me").unwrap();
        let almost = format!("{TEMP_PREFIX}{}", watasu::secret::random_token().expose());
        std::fs::write(files.join(&almost), b"still being written").unwrap();
        let fifty_nine_minutes_ago = SystemTime::now() - Duration::from_secs(59 * 60);
        std::fs::File::options().write(true).open(files.join(&almost)).unwrap().set_modified(fifty_nine_minutes_ago).unwrap();

        let report = app.state.gc.gc().remove_leftovers_in_batches(&files, 5).await.unwrap();

        assert_eq!(report, LeftoverReport::default());
        assert_eq!(names(&files), BTreeSet::from([young, almost]), "young leftovers are left");
    }
}
