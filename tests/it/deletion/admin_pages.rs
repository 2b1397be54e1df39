//! The admin's deletion pages in Japanese: every recorded reason and search key in words, no raw
//! code; the tables' scroll regions reachable from the keyboard, each cell labelled for a phone.

use super::*;
use crate::support::{PASSWORD, words::cells_with_raw_words};

both_backends! {
    async fn the_japanese_deletion_pages_show_words_for_every_code_reason_and_key(backend: Backend) {
        let app = deletion_app(backend).await;
        app.create_admin("admin@example.test").await;
        let admin = app.sign_in("admin@example.test", PASSWORD).await;
        let sender = populate(&app, "leaving@example.test").await;
        let store = FailingStore::new(app.state.store.clone());
        store.fail_deletes.store(true, Ordering::SeqCst);
        let policy = RetryPolicy { base: std::time::Duration::ZERO, cap: std::time::Duration::ZERO, max_attempts: 1 };
        let failing = runner_with_store(&app, "failing", store.clone()).with_policy(policy);
        let request = OpenRequest { subject_id: sender.id, actor_id: None, role: ActorRole::Admin, reapplies: None };
        let case = failing.open(&request).await.unwrap();
        assert_eq!(failing.run_case(case.id).await.unwrap(), Some(CaseState::PartiallyCompleted));

        let list = admin.get("/admin/deletions").await;
        let page = admin.get(&format!("/admin/deletions/{}", case.reference)).await;

        assert_eq!(list.status, 200);
        assert_eq!(page.status, 200);
        let review = list.texts("#needs-review .review-item");
        assert!(review[0].contains("ファイル保存先のエラー"), "{review:?}");
        let reason = |store: &str| page.texts(&format!("[data-store={store}] td[data-label=\"理由\"]"));
        assert_eq!(reason("stored_files"), ["ファイル保存先のエラー"]);
        let keys = page.texts(".evidence-row[data-store=codes] td[data-label=\"検索キー\"]");
        assert_eq!(keys, ["shares.sender_id の共有の otp_challenges.share_id"]);
        for page in [&list, &page] {
            assert_eq!(cells_with_raw_words(page), Vec::<(String, Vec<String>)>::new(), "{}", page.body);
        }
        // Each scrollable table is a named region the keyboard reaches.
        let regions = page.html();
        let selector = scraper::Selector::parse(".table-scroll").unwrap();
        let regions: Vec<_> = regions.select(&selector).collect();
        assert_eq!(regions.len(), 2);
        for region in regions {
            let attr = |name| region.value().attr(name);
            assert_eq!((attr("tabindex"), attr("role")), (Some("0"), Some("region")));
            assert!(attr("aria-label").is_some_and(|l| !l.is_empty()));
        }
    }
}
