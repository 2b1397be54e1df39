//! The ZIP of a handover of several files against the download of one file of the same total
//! size, alternated round by round: what streaming the stored entries piece by piece (records
//! from memory, each file opened when its turn comes) costs over sending one file. Each download
//! needs a handover of its own: its files are hard links of two stored files.

use std::path::Path;

use watasu::{
    db::Db,
    secret::random_token,
    share::{NewFile, ShareLinks, ShareRepository},
    storage::StoredFile,
};

use super::{blocking, downloads::share_of, load, procs::Watasu, samples::Samples, transfer};

/// Files in the bundle; together as large as the one file it is compared with.
pub const FILES: u64 = 4;

/// MB/s of the ZIP and of the one file, and each round's ZIP over one file.
#[derive(Default)]
pub struct Bundle {
    pub part_bytes: u64,
    pub zip: Samples,
    pub single: Samples,
    pub ratios: Samples,
}

/// `rounds` rounds of (one file, ZIP) in alternating order: the one file is `stored`, the ZIP
/// holds [`FILES`] files of a quarter of its size each.
pub async fn compare(db: &Db, server: &Watasu, data: &Path, stored: &Path, work: &Path, rounds: usize) -> Bundle {
    let size = std::fs::metadata(stored).unwrap().len();
    let part = work.join("bundle-part.bin");
    let (path, part_bytes) = (part.clone(), size / FILES);
    blocking(move || transfer::make_source(&path, part_bytes)).await;
    let mut figures = Bundle { part_bytes, ..Bundle::default() };
    for round in 0..rounds {
        let order = if round % 2 == 0 { [false, true] } else { [true, false] };
        let mut speeds = [0.0; 2];
        for zipped in order {
            let token = if zipped { bundle_of(db, data, &part).await } else { share_of(db, data, stored).await };
            let (cookie, csrf) = transfer::granted(db, &token).await;
            let base = server.base.clone();
            let moved = blocking(move || transfer::download_watasu(&base, &token, &cookie, &csrf)).await;
            // The ZIP adds its records to the files' bytes.
            let least = if zipped { part_bytes * FILES } else { size };
            assert!(moved.bytes >= least, "the download was cut short");
            speeds[usize::from(zipped)] = moved.mb_per_s();
        }
        figures.single.push(speeds[0]);
        figures.zip.push(speeds[1]);
        figures.ratios.push(speeds[1] / speeds[0]);
    }
    std::fs::remove_file(&part).unwrap();
    figures
}

/// A new handover of [`FILES`] hard links of `part`; returns its link token.
async fn bundle_of(db: &Db, data: &Path, part: &Path) -> String {
    let size_bytes = std::fs::metadata(part).unwrap().len();
    let stored = || {
        let key = random_token().expose().to_owned();
        std::fs::hard_link(part, data.join("files").join(&key)).unwrap();
        StoredFile { key, size_bytes, sha256: "0".repeat(64), crc32: 0, sealed: None }
    };
    let mut new = load::new_share(1, stored(), "part-1.bin");
    for n in 2..=FILES {
        let content_type = "application/octet-stream".into();
        new.files.push(NewFile { stored: stored(), name: format!("part-{n}.bin"), content_type, upload_id: None });
    }
    let issued = ShareLinks::new(ShareRepository::new(db.clone())).issue(&new).await.unwrap().remove(0);
    issued.token.expose().to_owned()
}
