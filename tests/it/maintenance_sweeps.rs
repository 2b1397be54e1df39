//! More of seed 004: the keyset cursor moves past a row the sweep skipped, and the trigger takes
//! the Bearer scheme in any case (RFC 7235).

use crate::support::Backend;
use watasu::maintenance::{Kind, Trigger};

use crate::support::clock;
use crate::{
    both_backends,
    maintenance::{SessionAge, TOKEN, insert_sessions, item_outcome, quiet_app, renew_session, session_exists},
};

async fn the_keyset_cursor_moves_past_a_row_the_sweep_skipped(backend: Backend) {
    let app = quiet_app(backend).await;
    let db = app.db();
    let ids = insert_sessions(db, 4, SessionAge::Expired).await;
    let m = &app.state.services.maintenance;
    let (run, _) = m.ledger().accept(Kind::Sessions, Trigger::Cli, "keyset").await.unwrap();
    let cutoff = m.ledger().start(run.id).await.unwrap().unwrap().cutoff.unwrap();
    let sweep = m.sweep(Kind::Sessions);
    let mut walk = sweep.start(db.clone(), run.id, cutoff);

    let first = walk.scan(2).await.unwrap();
    assert_eq!(first, ids[..2]);
    // The last row of the batch comes back to life between the scan and the delete…
    renew_session(db, ids[1]).await;
    let report = walk.apply(&first).await.unwrap();
    assert_eq!((report.deleted, report.skipped), (1, 1));
    // …and is expired again (before the cutoff) by the time the next batch is scanned: the
    // run has looked at it once and must not come back to it.
    clock::set_ago(db, "sessions", &["expires_at"], 3600, &clock::id(ids[1])).await;

    let second = walk.scan(2).await.unwrap();
    assert_eq!(second, ids[2..], "the cursor did not move past the skipped row");
    assert_eq!(walk.apply(&second).await.unwrap().deleted, 2);
    assert_eq!(walk.scan(2).await.unwrap(), Vec::<i64>::new());
    assert_eq!(item_outcome(db, run.id, ids[1]).await, "skipped");
    assert!(session_exists(db, ids[1]).await, "left for the next run, with its own cutoff");
}

async fn the_trigger_takes_the_bearer_scheme_in_any_case(backend: Backend) {
    let app = quiet_app(backend).await;
    let client = reqwest::Client::new();
    let lower = client
        .post(format!("{}/maintenance/runs?kind=codes", app.base))
        .header("Authorization", format!("bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(lower.status(), 202);
    let location = lower.headers()["location"].to_str().unwrap().to_owned();

    for scheme in ["BEARER", "Bearer", "bEaReR"] {
        let answer = client
            .get(format!("{}{location}", app.base))
            .header("Authorization", format!("{scheme}  {TOKEN}"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{scheme}");
    }
    for refused in [format!("Basic {TOKEN}"), format!("Bearer{TOKEN}"), TOKEN.to_owned(), "bearer wrong".to_owned()] {
        let answer =
            client.get(format!("{}{location}", app.base)).header("Authorization", &refused).send().await.unwrap();
        assert_eq!(answer.status(), 401, "{refused}");
    }
}

both_backends!(the_keyset_cursor_moves_past_a_row_the_sweep_skipped, the_trigger_takes_the_bearer_scheme_in_any_case);
