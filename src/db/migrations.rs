//! The embedded migrations, and the catch-up of the three that were edited after they shipped.
//!
//! Migrations 0030, 0035 and 0038 each gained statements after an instance could already have run
//! their first text; sqlx then refuses to start such an instance (the stored checksum differs).
//! Before migrating, a database that ran a first text runs what the edit added and takes the
//! current checksum, so both kinds of instance reach the same schema. No migration changes again:
//! `migrations/checksums.txt` holds every shipped one, and a test fails on any edit.

use anyhow::Context;
use sqlx::migrate::Migrator;

use super::{Db, Dialect};
use crate::on_db;

static SQLITE: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES: Migrator = sqlx::migrate!("migrations/postgres");

/// A migration whose text changed after it shipped: the first text's checksum (SHA-384, as sqlx
/// stores it) and the statements the edit added, which bring a database that ran the first text
/// to what the current one makes.
struct Edited {
    version: i64,
    first_checksum: &'static str,
    added: &'static str,
}

const SQLITE_EDITED: &[Edited] = &[
    Edited {
        version: 30,
        first_checksum: "4cb20ace2cc6d4563f58e46348d5ed00a45777de312a1b42d64f685e33cd3d7aa5cbbea6163bd565a97a32a3336c8c7d",
        added: CLEAR_LIMITED_NOTICES,
    },
    Edited {
        version: 35,
        first_checksum: "085992293a53a8ad4e5bfd1563a6b7a8c9c0ca8516e91da790087f94ac751a9d7bdd32992d01fcc182a8fad2603961b0",
        added: HANDOVERS_STEP,
    },
    Edited {
        version: 38,
        first_checksum: "9a970fa67b7cd5a01f0fcb34ab4845ab169a8a4bcc8a46164aa637bb01dc3ff5d0de02ae07bc5d3f58b57ab64ece81fb",
        added: "ALTER TABLE files ADD COLUMN scan_told_at REAL",
    },
];

const POSTGRES_EDITED: &[Edited] = &[
    Edited {
        version: 30,
        first_checksum: "01daf3b94515b4b35b96dabc16383b68d9a717e1cd04c5d7e78d132abaffa52a760f3c6370965d6909a70883a4dbb23f",
        added: CLEAR_LIMITED_NOTICES,
    },
    Edited {
        version: 35,
        first_checksum: "b66b15166970c8a54400abd1a8c0c26042d294710e945f58ce5775207457a880e3c888b57a006172de02753d68ce5f80",
        added: HANDOVERS_STEP,
    },
    Edited {
        version: 38,
        first_checksum: "c383fe319e70ce9c7bfe8b9acad132fc6173b55b94f2b9961f14f7427040a44b76e43be27bf8aa9af2b71ed0e94c776f",
        added: "ALTER TABLE files ADD COLUMN scan_told_at TIMESTAMPTZ",
    },
];

/// What 0030's edit added (the same in both dialects).
const CLEAR_LIMITED_NOTICES: &str = "UPDATE otp_challenges SET notice = NULL WHERE notice = 'limited'";

/// What 0035's edit added (the same in both dialects): an open deletion case gains the handovers step.
const HANDOVERS_STEP: &str = "UPDATE deletion_steps SET position = position + 1
 WHERE position > 11 AND case_id NOT IN (SELECT case_id FROM deletion_steps WHERE store = 'handovers');
INSERT INTO deletion_steps (case_id, position, store, action)
SELECT case_id, 12, 'handovers', 'delete' FROM deletion_steps WHERE store = 'file_records'
   AND case_id NOT IN (SELECT case_id FROM deletion_steps WHERE store = 'handovers')";

/// Brings a database that ran an edited migration's first text up to date, then applies the
/// embedded migrations that have not run yet.
pub async fn run(db: &Db) -> anyhow::Result<()> {
    let (migrator, edited) = match db {
        Db::Sqlite(_) => (&SQLITE, SQLITE_EDITED),
        Db::Postgres(_) => (&POSTGRES, POSTGRES_EDITED),
    };
    for edit in edited {
        catch_up(db, migrator, edit).await?;
    }
    on_db!(db, |pool| migrator.run(pool).await).context("applying database migrations")
}

/// When this database ran `edit` in its first text: the current checksum and the added
/// statements, in one transaction, so a crash leaves either both or neither.
async fn catch_up(db: &Db, migrator: &Migrator, edit: &Edited) -> anyhow::Result<()> {
    let stored: Result<Option<(Vec<u8>,)>, _> = on_db!(db, |pool| {
        sqlx::query_as("SELECT checksum FROM _sqlx_migrations WHERE version = $1")
            .bind(edit.version)
            .fetch_optional(pool)
            .await
    });
    // A new database has no ledger yet (the query fails): nothing ran, nothing to catch up.
    let Ok(Some((stored,))) = stored else { return Ok(()) };
    if hex::encode(&stored) != edit.first_checksum {
        return Ok(());
    }
    let current = migrator
        .iter()
        .find(|m| m.version == edit.version)
        .map(|m| m.checksum.to_vec())
        .context("an edited migration is not embedded")?;
    let what = || format!("catching up migration {:04}, edited after it shipped", edit.version);
    // The checksum first, conditionally: of instances starting at once, one takes the row and
    // runs the added statements; the others find the current checksum and skip.
    let caught_up = on_db!(db, |pool| {
        let mut tx = pool.begin_write().await.with_context(what)?;
        let taken = sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2 AND checksum = $3")
            .bind(current)
            .bind(edit.version)
            .bind(stored)
            .execute(&mut *tx)
            .await
            .with_context(what)?
            .rows_affected();
        if taken == 1 {
            sqlx::raw_sql(sqlx::AssertSqlSafe(edit.added)).execute(&mut *tx).await.with_context(what)?;
        }
        tx.commit().await.with_context(what)?;
        taken == 1
    });
    if !caught_up {
        return Ok(());
    }
    tracing::info!(version = edit.version, "caught up a migration that was edited after it shipped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `migrations/checksums.txt`: `VERSION DIALECT SHA384 NAME`, one line per shipped migration.
    fn listed() -> Vec<(i64, &'static str, &'static str)> {
        include_str!("../../migrations/checksums.txt")
            .lines()
            .map(|line| {
                let cells: Vec<&str> = line.split_whitespace().collect();
                (cells[0].parse().expect("a version"), cells[1], cells[2])
            })
            .collect()
    }

    #[test]
    fn no_shipped_migration_changes_and_each_new_one_is_listed() {
        let listed = listed();
        for (dialect, migrator) in [("sqlite", &SQLITE), ("postgres", &POSTGRES)] {
            let embedded: Vec<_> = migrator.iter().map(|m| (m.version, hex::encode(&m.checksum))).collect();
            assert!(embedded.len() > 30, "the {dialect} migrations were not found");
            for (version, checksum) in &embedded {
                let line = listed.iter().find(|(v, d, _)| v == version && *d == dialect);
                let Some((_, _, listed)) = line else {
                    panic!(
                        "{dialect} migration {version:04} is not in migrations/checksums.txt: add the line \
                         `{version:04} {dialect} {checksum} NAME` (sha384sum of the file) in the commit that adds it"
                    );
                };
                assert_eq!(
                    listed, checksum,
                    "{dialect} migration {version:04} changed after it shipped: add a new migration instead"
                );
            }
            for (version, _, _) in listed.iter().filter(|(_, d, _)| *d == dialect) {
                assert!(embedded.iter().any(|(v, _)| v == version), "{dialect} migration {version:04} was removed");
            }
        }
    }

    #[test]
    fn every_edited_migration_is_embedded_and_its_first_text_differs_from_the_current() {
        for (migrator, edited) in [(&SQLITE, SQLITE_EDITED), (&POSTGRES, POSTGRES_EDITED)] {
            for edit in edited {
                let current = migrator.iter().find(|m| m.version == edit.version).expect("embedded");
                assert_ne!(hex::encode(&current.checksum), edit.first_checksum);
            }
        }
    }
}
