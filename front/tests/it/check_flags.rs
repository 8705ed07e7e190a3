//! A check named by flags ([`CheckRequest`]): what is left out takes the variant's default,
//! what is given overrides it, and every refusal is one line naming its flag.

use leasehold_front::check_flags::{loopback, CheckRequest};
use leasehold_model::check::{CheckConfig, Engine, Renews};
use leasehold_model::{AckPolicy, Variant};

#[test]
fn nothing_given_is_the_variants_default_configuration() {
    let request = CheckRequest {
        variant: "unfenced-settle".into(),
        ..CheckRequest::default()
    };
    let config = request.config().expect("valid");
    assert_eq!(
        format!("{config:?}"),
        format!("{:?}", CheckConfig::default_for(Variant::UnfencedSettle))
    );
    let options = request.options().expect("valid");
    assert_eq!(options.engine, Engine::Leasehold);
    assert!(options.symmetry);
    assert_eq!(options.limits.threads, 1);
}

#[test]
fn what_is_given_overrides_the_default() {
    let request = CheckRequest {
        events: Some(2),
        workers: Some(2),
        policy: Some("ack_first".into()),
        crashes: Some(0),
        renews: Some("3".into()),
        no_symmetry: true,
        max_states: 1000,
        ..CheckRequest::default()
    };
    let config = request.config().expect("valid");
    assert_eq!((config.event_count, config.worker_count), (2, 2));
    assert_eq!(config.policy, AckPolicy::AckFirst);
    assert_eq!(config.budgets.crashes, 0);
    assert_eq!((config.renews, config.budgets.renews), (Renews::Budget, 3));
    let options = request.options().expect("valid");
    assert!(!options.symmetry);
    // The counterexample search is bounded by the search's own bound when that is smaller.
    assert_eq!(options.counterexample_states_max, 1000);
}

#[test]
fn refusals_are_one_line_naming_the_flag() {
    let refused = |request: CheckRequest| -> String {
        let error = match request.config() {
            Err(e) => e,
            Ok(_) => request.options().expect_err("refused"),
        };
        let text = error.to_string();
        assert_eq!(text.lines().count(), 1, "{text}");
        text
    };
    let cases = [
        (
            CheckRequest {
                variant: "nope".into(),
                ..CheckRequest::default()
            },
            "--variant: unknown variant 'nope'",
        ),
        (
            CheckRequest {
                policy: Some("later".into()),
                ..CheckRequest::default()
            },
            "--policy: unknown policy 'later'",
        ),
        (
            CheckRequest {
                renews: Some("many".into()),
                ..CheckRequest::default()
            },
            "--renews many: expected a number",
        ),
        (
            CheckRequest {
                fairness: Some("weak".into()),
                ..CheckRequest::default()
            },
            "--fairness weak: only with --renews unbounded",
        ),
        (
            CheckRequest {
                threads: 0,
                ..CheckRequest::default()
            },
            "--threads 0: must be between 1 and 64",
        ),
        (
            CheckRequest {
                engine: "stateright".into(),
                timed: true,
                ..CheckRequest::default()
            },
            "--for: stateright's checker cannot be stopped",
        ),
        (
            CheckRequest {
                time: Some("later".into()),
                ..CheckRequest::default()
            },
            "--time later: expected untimed or ticks",
        ),
        (
            CheckRequest {
                tick_ms: Some(1000),
                ..CheckRequest::default()
            },
            "--tick-ms: only with --time ticks",
        ),
        (
            CheckRequest {
                time: Some("ticks".into()),
                lease_ticks: Some(0),
                ..CheckRequest::default()
            },
            "--lease-ticks 0: must be between 1 and 16",
        ),
        (
            CheckRequest {
                time: Some("ticks".into()),
                renews: Some("unbounded".into()),
                ..CheckRequest::default()
            },
            "--time ticks: not with --renews unbounded",
        ),
        (
            CheckRequest {
                variant: "rabbitmq-channel".into(),
                time: Some("ticks".into()),
                ..CheckRequest::default()
            },
            "--time ticks: not with --variant rabbitmq-channel",
        ),
    ];
    for (request, expected) in cases {
        let text = refused(request);
        assert!(text.contains(expected), "{text}");
    }
}

#[test]
fn the_explorer_is_served_on_loopback_only() {
    assert_eq!(loopback("127.0.0.1:3000").expect("loopback").port(), 3000);
    assert!(loopback("[::1]:3000").is_ok());
    let text = loopback("10.0.0.1:3000").expect_err("refused").to_string();
    assert!(text.contains("loopback only"), "{text}");
    assert!(loopback("localhost").is_err());
}

/// `--time ticks` takes the default clock (ticks of 1 ms, leases of 3 ticks, a skew of 1), each
/// flag overriding one size; a variant whose default is timed keeps its own sizes.
#[test]
fn time_flags_set_the_clock() {
    use leasehold_model::check::Time;
    let request = CheckRequest {
        time: Some("ticks".into()),
        tick_ms: Some(1000),
        ..CheckRequest::default()
    };
    let config = request.config().expect("valid");
    assert_eq!(
        config.time,
        Time::Ticks {
            tick_ms: 1000,
            lease_ticks: 3,
            skew_ticks: 1
        }
    );
    assert!(config
        .to_string()
        .ends_with("--time ticks --tick-ms 1000 --lease-ticks 3 --skew-ticks 1"));
    let mutant = CheckRequest {
        variant: "renew-keeps-timer".into(),
        skew_ticks: Some(2),
        ..CheckRequest::default()
    };
    let config = mutant.config().expect("valid");
    assert_eq!(
        config.time,
        Time::Ticks {
            tick_ms: 1,
            lease_ticks: 2,
            skew_ticks: 2
        }
    );
    let untimed = CheckRequest {
        variant: "renew-keeps-timer".into(),
        time: Some("untimed".into()),
        ..CheckRequest::default()
    };
    assert_eq!(untimed.config().expect("valid").time, Time::Untimed);
}
