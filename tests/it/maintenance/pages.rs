//! The admin's maintenance pages in Japanese: run kinds, triggers, states, notes and row outcomes
//! in words, no raw code (`share_gc`, `succeeded`); every cell labelled for a phone.

use super::*;
use crate::support::Backend;
use crate::support::words::cells_with_raw_words;

async fn the_japanese_maintenance_pages_show_no_raw_code(backend: Backend) {
    let app = quiet_app(backend).await;
    insert_sessions(app.db(), 2, SessionAge::Expired).await;
    let m = &app.state.services.maintenance;
    let ok = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
    let (gc, _) = m.ledger().accept(Kind::ShareGc, Trigger::Timer, "gc").await.unwrap();
    m.ledger().start(gc.id).await.unwrap();
    m.ledger().abandon(gc.id).await.unwrap();
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;

    let list = admin.get("/admin/maintenance").await;
    let run = admin.get(&format!("/admin/maintenance/{}", ok.id)).await;

    let gc_row = |css: &str| list.texts(&format!("tr[data-run=\"{}\"] {css}", gc.id));
    assert_eq!(gc_row("td[data-label=\"種類\"]"), ["ファイルの後片付け"]);
    assert_eq!(gc_row("td[data-label=\"メモ\"]"), ["中断: 処理権の期限が切れました"]);
    assert_eq!(run.texts(".status"), ["成功"]);
    for page in [&list, &run] {
        assert_eq!(page.status, 200);
        assert_eq!(cells_with_raw_words(page), Vec::<(String, Vec<String>)>::new(), "{}", page.body);
        let cells = page.html();
        let labelled = scraper::Selector::parse(".stack td").unwrap();
        assert!(cells.select(&labelled).all(|td| td.value().attr("data-label").is_some_and(|l| !l.is_empty())));
        assert!(cells.select(&labelled).next().is_some());
    }
}

both_backends!(the_japanese_maintenance_pages_show_no_raw_code);
