//! A deletion case with hundreds of evidence rows opens, on a phone, with its stores grouped by
//! outcome and its evidence counted per store and outcome; the rows themselves are folded behind
//! `<details>`, so the page stays a few screens tall, and open on request. Both languages;
//! axe-core checks every page state.

use crate::{
    deletion::fixtures::{admin_case, deletion_app, impatient_runner, populate, store_failing_deletes},
    support::{
        Backend,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
        count, execute,
    },
};
use watasu::db::Sql;

/// Each pass doubles the case's evidence rows (the same rows again: only their number matters here).
const DOUBLE_EVIDENCE: Sql = Sql::same(
    "INSERT INTO deletion_evidence (case_id, store, action, outcome, searched_by, found,
                                   deleted, remaining, detail, started_at)
     SELECT case_id, store, action, outcome, searched_by, found, deleted, remaining, detail, started_at
       FROM deletion_evidence WHERE case_id = $1",
);

/// A case whose page was 11,000 px tall on a phone stays within this many screens.
const SCREENS: f64 = 6.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deletion_case_with_hundreds_of_rows_opens_with_a_summary_on_a_phone() {
    let app = deletion_app(Backend::Sqlite).await;
    app.create_admin("admin@example.test").await;
    let sender = populate(&app, "leaving@example.test").await;
    let failing = impatient_runner(&app, "failing", store_failing_deletes(&app), 1);
    let case = admin_case(&failing, sender.id).await;
    failing.run_case(case.id).await.unwrap();
    const ROWS: &str = "SELECT count(*) FROM deletion_evidence WHERE case_id = $1";
    // Just past 200 rows: hundreds, and no more than axe-core has to walk in every page state.
    let mut rows = count(app.db(), ROWS, case.id).await;
    while rows <= 200 {
        execute(app.db(), DOUBLE_EVIDENCE, case.id).await;
        rows = count(app.db(), ROWS, case.id).await;
    }

    for (language, options) in [
        ("ja", BrowserOptions::phone()),
        ("en", BrowserOptions::phone().language("en")),
        ("en", BrowserOptions::desktop().language("en")),
    ] {
        let browser = BrowserSession::start(options).await;
        browser.sign_in(&app.base, "admin@example.test").await;
        browser.goto(&format!("{}/admin/deletions/{}", app.base, case.reference)).await;
        browser.wait_for("[data-evidence-summary] td", DEFAULT_WAIT).await;
        assert!(!browser.text("[data-steps-summary] tbody").await.is_empty(), "no steps by outcome");
        let what = format!("the case page in {language}");
        browser.assert_no_horizontal_overflow(&what).await;

        let sizes = browser.execute("return [document.documentElement.scrollHeight, window.innerHeight];").await;
        let (height, screen) = (sizes[0].as_f64().unwrap(), sizes[1].as_f64().unwrap());
        assert!(height <= SCREENS * screen, "{what}: {height} px for a {screen} px screen");
        let counted = browser
            .execute("return [...document.querySelectorAll('[data-evidence-summary] tbody td:last-child')].reduce((n, td) => n + Number(td.textContent), 0);")
            .await;
        assert_eq!(counted.as_i64(), Some(rows), "{what}: the summary does not count every row");
        assert!(browser.text("[data-evidence-all] summary").await.contains(&rows.to_string()), "{what}");

        browser.click("[data-evidence-all] summary").await;
        let opened = browser.execute("return document.documentElement.scrollHeight;").await;
        assert!(opened.as_f64().unwrap() > height * 2.0, "{what}: the rows did not unfold ({opened} px)");
        browser.close().await;
    }
}
