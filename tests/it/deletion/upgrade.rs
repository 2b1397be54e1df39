//! Migration 0050 on cases an older version left: a case still open gains a step for every new
//! store, pending, and runs its steps in today's order; a finished case keeps its steps as they were.

use std::{path::Path, time::Duration};

use watasu::{
    db::{Db, Sql},
    deletion::Store,
    on_db,
};

use crate::{
    both_backends,
    support::{Backend, fresh_database},
};

/// The stores of a case before 0050, in their run order then.
const BEFORE: [&str; 17] = [
    "sessions",
    "invitations",
    "codes",
    "grants",
    "delivered_mail",
    "mail_outbox",
    "share_events",
    "rate_limits",
    "shares",
    "uploads",
    "file_keys",
    "stored_files",
    "file_records",
    "handovers",
    "logs",
    "backups",
    "account",
];

async fn migrator(db: &Db) -> sqlx::migrate::Migrator {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(db.backend_name());
    sqlx::migrate::Migrator::new(dir.as_path()).await.unwrap()
}

/// A case of the account `$1` in `state`, with the old steps; the first two done.
async fn old_case(db: &Db, subject: i64, state: &'static str) {
    const CASE: Sql = Sql::same(
        "INSERT INTO deletion_cases (reference, subject_id, subject_created_at, actor_role, state)
         SELECT 'case-' || CAST(id AS TEXT), id, created_at, 'operator', $2 FROM users WHERE id = $1",
    );
    const STEP: Sql = Sql::same(
        "INSERT INTO deletion_steps (case_id, position, store, action, outcome)
         SELECT id, $2, $3, $4, $5 FROM deletion_cases WHERE subject_id = $1",
    );
    on_db!(db, |pool| {
        use watasu::db::Dialect;
        sqlx::query(pool.sql(&CASE)).bind(subject).bind(state).execute(pool).await.unwrap();
        for (position, store) in BEFORE.iter().enumerate() {
            let action = if ["delivered_mail", "logs", "backups"].contains(store) { "retain" } else { "delete" };
            let outcome = if position < 2 || state == "completed" { "not_found" } else { "pending" };
            let query = sqlx::query(pool.sql(&STEP)).bind(subject).bind(position as i32).bind(*store);
            query.bind(action).bind(outcome).execute(pool).await.unwrap();
        }
    });
}

/// A case's steps in run order, as `store:outcome`.
async fn steps(db: &Db, subject: i64) -> Vec<String> {
    const SQL: &str = "SELECT s.store || ':' || s.outcome FROM deletion_steps s
                         JOIN deletion_cases c ON c.id = s.case_id WHERE c.subject_id = $1 ORDER BY s.position";
    on_db!(db, |pool| sqlx::query_scalar(SQL).bind(subject).fetch_all(pool).await.unwrap())
}

async fn an_open_case_gains_every_new_stores_step_and_a_finished_case_keeps_its_own(backend: Backend) {
    let data_dir = tempfile::tempdir().unwrap();
    let url = fresh_database(backend, data_dir.path()).await;
    let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
    let migrator = migrator(&db).await;
    on_db!(&db, |pool| migrator.run_to(48, pool).await.unwrap());
    const USERS: &str = "INSERT INTO users (email, display_name, password_hash, role)
         VALUES ('open@example.test', 'Open', 'x', 'sender'), ('done@example.test', 'Done', 'x', 'sender')";
    on_db!(&db, |pool| sqlx::query(USERS).execute(pool).await.unwrap().rows_affected());
    let [open, done] = [1, 2];
    old_case(&db, open, "in_progress").await;
    old_case(&db, done, "completed").await;
    let finished = steps(&db, done).await;

    on_db!(&db, |pool| migrator.run(pool).await.unwrap());

    let expected: Vec<String> = Store::ORDER
        .iter()
        .map(|store| {
            let done = [Store::Sessions, Store::Invitations].contains(store);
            format!("{}:{}", store.code(), if done { "not_found" } else { "pending" })
        })
        .collect();
    assert_eq!(steps(&db, open).await, expected, "the open case runs every store in today's order");
    assert_eq!(steps(&db, done).await, finished, "a finished case keeps the steps it had");
    db.close().await;
}

both_backends!(an_open_case_gains_every_new_stores_step_and_a_finished_case_keeps_its_own);
