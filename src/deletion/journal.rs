//! The deletion journal: an append-only file in the data folder that lists every deletion case by
//! reference and the internal id and creation time of the account it deleted — no address, no
//! name, nothing else. It lives outside the database because a restored backup that predates a
//! case holds neither the case nor its evidence, yet holds the data again: `watasu deletion
//! reapply` reads this file to find what to delete once more.

use std::{
    io::{BufRead, Write},
    path::{Path, PathBuf},
};

use anyhow::Context;

/// One journalled case: enough to find the same account again, nothing more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub event: String,
    pub reference: String,
    pub subject_id: i64,
    /// The account row's creation time in microseconds: a later account that reuses the id
    /// does not match.
    pub subject_created_micros: i64,
}

#[derive(Clone, Debug)]
pub struct Journal {
    path: PathBuf,
}

/// The journal's file name inside the data folder.
pub const FILE_NAME: &str = "deletion-journal";

impl Journal {
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self { path: data_dir.join(FILE_NAME) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line and syncs it to disk before returning.
    pub fn append(&self, entry: &Entry) -> anyhow::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)
            .with_context(|| format!("opening {}", self.path.display()))?;
        writeln!(file, "{} {} {} {}", entry.event, entry.reference, entry.subject_id, entry.subject_created_micros)?;
        file.sync_all().context("syncing the deletion journal")?;
        Ok(())
    }

    /// Every entry, oldest first. A missing file is an empty journal; a damaged line is an error,
    /// since skipping it could leave restored data in place.
    pub fn read(&self) -> anyhow::Result<Vec<Entry>> {
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("opening {}", self.path.display())),
        };
        let mut entries = Vec::new();
        for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let parse = || -> Option<Entry> {
                let mut parts = line.split(' ');
                let entry = Entry {
                    event: parts.next()?.to_owned(),
                    reference: parts.next()?.to_owned(),
                    subject_id: parts.next()?.parse().ok()?,
                    subject_created_micros: parts.next()?.parse().ok()?,
                };
                parts.next().is_none().then_some(entry)
            };
            entries.push(parse().with_context(|| format!("{} line {} is damaged", self.path.display(), number + 1))?);
        }
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::in_data_dir(dir.path());
        assert!(journal.read().unwrap().is_empty());
        let entry = |event: &str, n| Entry {
            event: event.to_owned(),
            reference: format!("DEL-{n}"),
            subject_id: n,
            subject_created_micros: 1_700_000_000_000_000 + n,
        };
        journal.append(&entry("opened", 1)).unwrap();
        journal.append(&entry("completed", 1)).unwrap();
        assert_eq!(journal.read().unwrap(), vec![entry("opened", 1), entry("completed", 1)]);
    }

    #[test]
    fn a_damaged_line_is_an_error_not_a_skip() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "opened DEL-1 x 5\n").unwrap();
        assert!(Journal::in_data_dir(dir.path()).read().is_err());
    }
}
