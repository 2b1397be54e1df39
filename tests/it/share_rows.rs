//! A share row is read exactly as stored: a status none of the three is an error, never a guess.

use crate::support::Backend;
use watasu::db::Db;

use crate::{both_backends, support::TestApp};

async fn a_stored_status_none_of_the_three_is_an_error_not_an_active_share(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    // A row written by a newer version, or damaged: the schema's CHECK is lifted to store it
    // (SQLite by a pragma on one connection, PostgreSQL by dropping the constraint).
    match app.db() {
        Db::Sqlite(pool) => {
            let mut conn = pool.acquire().await.unwrap();
            sqlx::query("PRAGMA ignore_check_constraints = ON").execute(&mut *conn).await.unwrap();
            sqlx::query("UPDATE shares SET status = 'archived' WHERE id = $1")
                .bind(share.id)
                .execute(&mut *conn)
                .await
                .unwrap();
            sqlx::query("PRAGMA ignore_check_constraints = OFF").execute(&mut *conn).await.unwrap();
        }
        Db::Postgres(pool) => {
            sqlx::query("ALTER TABLE shares DROP CONSTRAINT shares_status_check").execute(pool).await.unwrap();
            sqlx::query("UPDATE shares SET status = 'archived' WHERE id = $1")
                .bind(share.id)
                .execute(pool)
                .await
                .unwrap();
        }
    }

    let resolved = app.state.shares.links.resolve(&share.token).await;

    assert!(resolved.is_err(), "an unknown status was read as {:?}", resolved.map(|s| s.status));
    let page = app.browser().get_with(&format!("/s/{}", share.token), &[("Accept-Language", "en")]).await;
    assert_ne!(page.status, 200, "{}", page.body);
    assert!(page.attr("input[name=email]", "name").is_none(), "the email step was offered: {}", page.body);
}

both_backends!(a_stored_status_none_of_the_three_is_an_error_not_an_active_share);
