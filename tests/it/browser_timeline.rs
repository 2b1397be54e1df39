//! A share's timeline in a real Chromium, on a phone in Japanese and on a desktop in English without
//! JavaScript: days as headings, times only, the zone once, a new link labelled, Japanese event
//! words kept whole (`keep-all` between the phrase marks), nothing scrolling sideways. The harness
//! checks each page with axe-core.

use watasu::{
    i18n::Lang,
    share::{EventKind, ShareEvents},
};

use crate::{
    both_backends,
    support::{
        Backend, PASSWORD, TestApp,
        browser::{BrowserOptions, BrowserSession, DEFAULT_WAIT},
    },
};

async fn the_timeline_reads_by_day_at_both_widths(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let rounds = [
        (Lang::Ja, BrowserOptions::phone()),
        (Lang::En, BrowserOptions::desktop().language("en").without_javascript()),
    ];
    for (round, (lang, options)) in rounds.into_iter().enumerate() {
        let email = format!("timeline-{round}@example.test");
        let sender = app.create_sender_with_password(&email, "Sender Sato", PASSWORD).await;
        let share = app.fake_share().sender(sender).create().await;
        let events = ShareEvents::new(app.db().clone());
        for kind in [
            EventKind::Opened,
            EventKind::CodeRequestsBlocked,
            EventKind::LinkRenewed,
            EventKind::CodeFailed,
            EventKind::CodeFailed,
        ] {
            events.record(share.id, kind).await.unwrap();
        }
        app.set_ago("share_events", &["at"], 2 * 24 * 3600, &format!("share_id = {} AND kind = 'opened'", share.id))
            .await;
        let browser = BrowserSession::start(options).await;
        browser.sign_in(&app.base, &email).await;
        browser.goto(&format!("{}/shares/{}", app.base, share.id)).await;
        browser.wait_for(".timeline", DEFAULT_WAIT).await;
        let t = lang.text();

        assert_eq!(browser.find_all(".timeline-day").await.len(), 2, "round {round}");
        let zone = t.dashboard.timeline.zone_line.split("{zone}").next().unwrap();
        assert!(browser.text("[data-timeline-zone]").await.starts_with(zone));
        assert_eq!(
            browser.text(".timeline li[data-kind=link_renewed] .link-label").await,
            t.dashboard.timeline.new_link.replace("{n}", "2")
        );
        assert!(browser.text(".timeline li[data-kind=code_failed] .event-count").await.starts_with("×2"));
        let word_break =
            browser.execute("return getComputedStyle(document.querySelector('.timeline .phrased')).wordBreak;").await;
        let expected = if lang == Lang::Ja { "keep-all" } else { "normal" };
        assert_eq!(word_break.as_str(), Some(expected), "round {round}");
        browser.assert_no_horizontal_overflow("the timeline").await;
        browser.close().await;
    }
    app.stop().await;
}

both_backends!(the_timeline_reads_by_day_at_both_widths);
