//! Sweep leases under races, run for real: a holder giving its lease back while another run
//! takes it is never reported as a run whose lease ran out.

use std::time::Duration;

use crate::{both_backends, maintenance::quiet_app};

const TTL: Duration = Duration::from_secs(60);

both_backends! {
    async fn a_lease_given_back_while_another_run_takes_it_is_never_reported_as_taken_over(backend: Backend) {
        let app = quiet_app(backend).await;
        let leases = app.state.maintenance.leases().clone();
        let mut taken = 0;
        for round in 0..300 {
            let (live, next) = (format!("live-{round}"), format!("next-{round}"));
            assert!(leases.acquire("race", &live, TTL).await.unwrap().is_some());
            let release = tokio::spawn({
                let (leases, live) = (leases.clone(), live.clone());
                async move { leases.release("race", &live).await }
            });
            let take = tokio::spawn({
                let (leases, next) = (leases.clone(), next.clone());
                async move { leases.acquire("race", &next, TTL).await }
            });
            release.await.unwrap().unwrap();
            if let Some(take) = take.await.unwrap().unwrap() {
                taken += 1;
                assert_eq!(
                    take.previous_holder, None,
                    "round {round}: {live} gave its lease back unexpired, yet was reported as taken over"
                );
            }
            leases.release("race", &next).await.unwrap();
        }
        assert!(taken > 0, "no round had the second run take the lease");
    }

    async fn an_expired_lease_is_taken_over_and_names_its_previous_holder(backend: Backend) {
        let app = quiet_app(backend).await;
        let leases = app.state.maintenance.leases();
        assert!(leases.acquire("sessions", "41", TTL).await.unwrap().is_some());
        assert_eq!(leases.acquire("sessions", "42", TTL).await.unwrap(), None, "taken while held");
        crate::support::execute(
            app.db(),
            "UPDATE maintenance_leases SET expires_at = unixepoch('subsec') - $1 WHERE name = 'sessions'",
            "UPDATE maintenance_leases SET expires_at = now() - interval '1 second' * $1 WHERE name = 'sessions'",
            1,
        )
        .await;
        let taken = leases.acquire("sessions", "42", TTL).await.unwrap().expect("an expired lease is free");
        assert_eq!(taken.previous_holder.as_deref(), Some("41"));
        assert_eq!(leases.holder("sessions").await.unwrap().as_deref(), Some("42"));
    }
}
