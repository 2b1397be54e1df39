//! The claim of a one-time download and the GC that purges what is consumed or expired, heals itself and stays bounded.

use super::*;
use crate::support::Backend;

async fn the_first_download_is_claimed_and_the_second_is_refused(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, _) = f.share().await;

    let first = f.repo.mark_consumed(id, None).await.unwrap();
    let second = f.repo.mark_consumed(id, None).await.unwrap();

    assert!(first, "the first claim must win");
    assert!(!second, "the second claim must be refused");
    assert_eq!(f.status(id).await, "consumed");
}

async fn an_expired_share_cannot_be_claimed_and_stays_active(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, _) = f.expired_share().await;

    let claimed = f.repo.mark_consumed(id, None).await.unwrap();

    assert!(!claimed);
    assert_eq!(f.status(id).await, "active");
}

async fn the_gc_purges_a_consumed_share(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.share().await;
    f.files.place(&key);
    assert!(f.repo.mark_consumed(id, None).await.unwrap());
    f.first_byte(id).await;

    let done = f.gc.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(done, report(1, 0, 0));
    assert!(!f.files.exists(&key));
    assert_eq!(f.status(id).await, "purged");
    assert_eq!(purged_events(&f.app, id).await, 1);
}

async fn the_gc_purges_an_expired_share_that_was_never_downloaded(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.expired_share().await;
    f.files.place(&key);

    let done = f.gc.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(done, report(1, 0, 0));
    assert!(!f.files.exists(&key));
    assert_eq!(f.status(id).await, "purged");
}

async fn the_gc_leaves_an_active_unexpired_share_untouched(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.share().await;
    f.files.place(&key);

    let done = f.gc.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(done, report(0, 0, 0));
    assert!(f.files.exists(&key));
    assert_eq!(f.status(id).await, "active");
}

async fn a_consumed_share_is_protected_during_the_delivery_grace_then_purged(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.share().await;
    f.files.place(&key);
    assert!(f.repo.mark_consumed(id, None).await.unwrap());
    f.first_byte(id).await;

    let with_grace = f.gc_with(GRACE_15_MIN, NO_TIME).collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(with_grace, report(0, 0, 0), "a file being delivered must not be collected");
    assert!(f.files.exists(&key));
    assert_eq!(f.status(id).await, "consumed");

    let after_grace = f.gc.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(after_grace, report(1, 0, 0));
    assert!(!f.files.exists(&key));
    assert_eq!(f.status(id).await, "purged");
}

async fn a_consumed_share_near_expiry_is_not_purged_by_the_expiry_branch_during_the_grace(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.share().await;
    f.files.place(&key);
    assert!(f.repo.mark_consumed(id, None).await.unwrap());
    f.first_byte(id).await;
    f.app.expire_share_ago(id, 60).await;
    let with_grace = f.gc_with(GRACE_15_MIN, NO_TIME);

    let during_grace = with_grace.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(during_grace, report(0, 0, 0), "the expiry branch must not bypass the delivery grace");
    assert!(f.files.exists(&key));
    assert_eq!(f.status(id).await, "consumed");

    f.app.consumed_ago(id, 16 * 60).await;
    let after_grace = with_grace.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(after_grace, report(1, 0, 0));
    assert!(!f.files.exists(&key));
    assert_eq!(f.status(id).await, "purged");
}

async fn a_claim_that_got_no_byte_keeps_its_file_until_the_expiry_then_the_grace_runs_from_the_first_byte(
    backend: Backend,
) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.share().await;
    f.files.place(&key);
    assert!(f.repo.mark_consumed(id, None).await.unwrap());
    let with_grace = f.gc_with(GRACE_15_MIN, NO_TIME);

    // Claimed long ago, but no byte went out: the grace has not started.
    f.app.set_ago("shares", &["consumed_at"], 16 * 60, &crate::support::clock::id(id)).await;
    assert_eq!(with_grace.collect(10, Trigger::Cli).await.unwrap(), report(0, 0, 0), "purged before a byte went out");
    assert!(f.files.exists(&key));

    // The first byte, late: the grace runs from it.
    f.first_byte(id).await;
    assert_eq!(with_grace.collect(10, Trigger::Cli).await.unwrap(), report(0, 0, 0));
    f.app.set_ago("shares", &["delivery_started_at"], 16 * 60, &crate::support::clock::id(id)).await;
    assert_eq!(with_grace.collect(10, Trigger::Cli).await.unwrap(), report(1, 0, 0));
    assert!(!f.files.exists(&key));
    assert_eq!(f.status(id).await, "purged");
}

async fn a_claim_that_never_got_a_byte_is_collected_a_grace_after_the_expiry(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.share().await;
    f.files.place(&key);
    assert!(f.repo.mark_consumed(id, None).await.unwrap());
    let with_grace = f.gc_with(GRACE_15_MIN, NO_TIME);

    f.app.expire_share_ago(id, 14 * 60).await;
    assert_eq!(with_grace.collect(10, Trigger::Cli).await.unwrap(), report(0, 0, 0));
    f.app.expire_share_ago(id, 16 * 60).await;
    assert_eq!(with_grace.collect(10, Trigger::Cli).await.unwrap(), report(1, 0, 0));
    assert!(!f.files.exists(&key));
}

async fn the_gc_heals_itself_when_a_delete_fails(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.share().await;
    f.files.place(&key);
    f.files.fail_on(&key);
    assert!(f.repo.mark_consumed(id, None).await.unwrap());
    f.first_byte(id).await;

    let failing = f.gc.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(failing, report(0, 1, 0));
    assert_eq!(f.status(id).await, "consumed", "a file still there must not be marked purged");
    assert!(f.files.exists(&key));
    assert_eq!(purge_attempts(&f.app, id).await, 1);
    assert_eq!(purged_events(&f.app, id).await, 0);

    f.files.clear_failure(&key);
    let healed = f.gc.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(healed, report(1, 0, 0));
    assert!(!f.files.exists(&key));
    assert_eq!(f.status(id).await, "purged");
}

async fn failing_rows_do_not_block_the_rows_after_them(backend: Backend) {
    let f = Fixture::new(backend).await;
    let mut shares = Vec::new();
    for n in 1..=8 {
        let (id, key) = f.expired_share().await;
        f.files.place(&key);
        if n <= 5 {
            f.files.fail_on(&key);
        }
        shares.push((id, key));
    }
    let runner = GcRunner::new(f.gc_with(NO_TIME, RETRY_60_MIN), 5);

    let first = runner.try_pass(Trigger::Timer).await.expect("no pass in flight").unwrap();
    let second = runner.try_pass(Trigger::Timer).await.expect("no pass in flight").unwrap();

    assert_eq!(first, report(0, 5, 0), "the first pass takes the five failing rows");
    assert_eq!(second, report(3, 0, 0), "backed-off rows must let the pass reach the healthy ones");
    for (id, key) in &shares[..5] {
        assert_eq!(f.status(*id).await, "active");
        assert!(f.files.exists(key));
        assert_eq!(purge_attempts(&f.app, *id).await, 1);
    }
    for (id, key) in &shares[5..] {
        assert_eq!(f.status(*id).await, "purged");
        assert!(!f.files.exists(key));
    }
}

async fn a_failed_purge_is_retried_once_the_backoff_has_elapsed(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.expired_share().await;
    f.files.place(&key);
    f.files.fail_on(&key);
    let with_backoff = f.gc_with(NO_TIME, RETRY_60_MIN);

    let failing = with_backoff.collect(10, Trigger::Cli).await.unwrap();
    f.files.clear_failure(&key);
    let backing_off = with_backoff.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(failing, report(0, 1, 0));
    assert_eq!(backing_off, report(0, 0, 0), "a row backing off must not be picked up");
    assert_eq!(f.status(id).await, "active");
    assert!(f.files.exists(&key));

    f.app.end_purge_backoff(id).await;
    let retried = with_backoff.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(retried, report(1, 0, 0));
    assert!(!f.files.exists(&key));
    assert_eq!(f.status(id).await, "purged");
}

async fn the_gc_advances_when_the_file_was_already_absent(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.share().await; // never placed: a crash after the delete, say
    assert!(f.repo.mark_consumed(id, None).await.unwrap());
    f.first_byte(id).await;

    let done = f.gc.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(done, report(1, 0, 0));
    assert!(!f.files.exists(&key));
    assert_eq!(f.status(id).await, "purged");
}

async fn an_active_share_cannot_be_purged_directly(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, _) = f.share().await;

    let purged = f.repo.mark_purged(id).await.unwrap();

    assert!(!purged, "an active, unexpired share must never be marked purged");
    assert_eq!(f.status(id).await, "active");
}

async fn a_purged_share_is_forward_only(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.share().await;
    f.files.place(&key);
    assert!(f.repo.mark_consumed(id, None).await.unwrap());
    f.first_byte(id).await;
    assert_eq!(f.gc.collect(10, Trigger::Cli).await.unwrap(), report(1, 0, 0));

    let again = f.gc.collect(10, Trigger::Cli).await.unwrap();
    let purged_twice = f.repo.mark_purged(id).await.unwrap();
    let claimed_after = f.repo.mark_consumed(id, None).await.unwrap();

    assert_eq!(again, report(0, 0, 0));
    assert!(!purged_twice);
    assert!(!claimed_after);
    assert_eq!(f.status(id).await, "purged");
    assert_eq!(purged_events(&f.app, id).await, 1);

    // Still forward only once its expiry has passed too (the expiry branch of mark_purged).
    f.app.expire_share(id).await;
    assert!(!f.repo.mark_purged(id).await.unwrap(), "a purged, expired share was purged again");
    assert_eq!(f.gc.collect(10, Trigger::Cli).await.unwrap(), report(0, 0, 0));
    assert_eq!(purged_events(&f.app, id).await, 1);
}

async fn the_access_time_gc_is_bounded(backend: Backend) {
    let f = Fixture::new(backend).await;
    for _ in 0..8 {
        let (_, key) = f.expired_share().await;
        f.files.place(&key);
    }
    let runner = GcRunner::new(f.gc.clone(), 5);

    let mut passes = Vec::new();
    for _ in 0..3 {
        passes.push(runner.try_pass(Trigger::Timer).await.expect("no pass in flight").unwrap());
    }

    assert_eq!(passes, [report(5, 0, 0), report(3, 0, 0), report(0, 0, 0)]);
    assert_eq!(count(f.app.db(), "SELECT count(*) FROM shares WHERE status = 'purged' AND id > $1", 0).await, 8);
}

both_backends!(
    the_first_download_is_claimed_and_the_second_is_refused,
    an_expired_share_cannot_be_claimed_and_stays_active,
    the_gc_purges_a_consumed_share,
    the_gc_purges_an_expired_share_that_was_never_downloaded,
    the_gc_leaves_an_active_unexpired_share_untouched,
    a_consumed_share_is_protected_during_the_delivery_grace_then_purged,
    a_consumed_share_near_expiry_is_not_purged_by_the_expiry_branch_during_the_grace,
    a_claim_that_got_no_byte_keeps_its_file_until_the_expiry_then_the_grace_runs_from_the_first_byte,
    a_claim_that_never_got_a_byte_is_collected_a_grace_after_the_expiry,
    the_gc_heals_itself_when_a_delete_fails,
    failing_rows_do_not_block_the_rows_after_them,
    a_failed_purge_is_retried_once_the_backoff_has_elapsed,
    the_gc_advances_when_the_file_was_already_absent,
    an_active_share_cannot_be_purged_directly,
    a_purged_share_is_forward_only,
    the_access_time_gc_is_bounded
);
