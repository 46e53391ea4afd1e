//! Which replica served each request, which sessions the router scattered, and what the
//! cache would have given on one server or with perfect affinity.
//!
//! Requests go out one at a time, so a replica whose counters moved between two scrapes
//! served the request in between ([`AttributedBy::Metrics`]). Without usable counters, a
//! turn that reused less than half of what its own session left in the cache is taken to
//! have moved ([`AttributedBy::Cache`]), and without cached-token counts, a turn in the
//! slow cluster of TTFT per prompt token ([`AttributedBy::Ttft`]).

use super::metrics::CacheCounters;
use crate::cache_profile::CacheProfile as Profile;
pub use crate::measure::report::fleet::{AttributedBy, ScatteredSession};
use std::rc::Rc;

/// One request as sent and answered.
#[derive(Debug, Clone)]
pub struct Sent {
    pub session: usize,
    pub turn: usize,
    pub prompt_tokens: usize,
    pub cached_tokens: Option<usize>,
    pub ttft_ms: f64,
    /// Per replica: the counters' change over this request (`None`: the scrape failed).
    pub deltas: Vec<Option<CacheCounters>>,
    /// Cached tokens one server with every earlier request would give.
    pub predicted_single_server: usize,
    /// Cached tokens if every session stayed on one replica (sessions spread evenly).
    pub predicted_affinity: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribution {
    /// Index into the replicas, when the counters tell.
    pub replica: Option<usize>,
    pub by: AttributedBy,
    /// Whether a later turn stayed with its session's cache (for the inferred methods).
    pub stayed: Option<bool>,
}

/// The replica whose counters moved, if exactly one did.
pub fn replica_from_metrics(deltas: &[Option<CacheCounters>]) -> Option<usize> {
    let moved: Vec<usize> = deltas
        .iter()
        .enumerate()
        .filter(|(_, d)| d.as_ref().is_some_and(|d| d.activity > 0.0))
        .map(|(i, _)| i)
        .collect();
    match moved.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

pub fn attribute(sent: &[Sent]) -> Vec<Attribution> {
    let from_metrics: Vec<Option<usize>> = sent
        .iter()
        .map(|s| replica_from_metrics(&s.deltas))
        .collect();
    let slow = slow_cluster(sent);
    sent.iter()
        .zip(from_metrics)
        .zip(slow)
        .map(|((s, replica), slow)| {
            if replica.is_some() {
                return Attribution {
                    replica,
                    by: AttributedBy::Metrics,
                    stayed: None,
                };
            }
            if s.turn == 0 {
                return Attribution {
                    replica: None,
                    by: AttributedBy::Unknown,
                    stayed: None,
                };
            }
            match s.cached_tokens {
                Some(cached) => Attribution {
                    replica: None,
                    by: AttributedBy::Cache,
                    stayed: Some(cached * 2 >= s.predicted_affinity),
                },
                None => Attribution {
                    replica: None,
                    by: AttributedBy::Ttft,
                    stayed: Some(!slow),
                },
            }
        })
        .collect()
}

/// Splits later turns by TTFT per prompt token into a fast and a slow group (the widest gap
/// in sorted order); `true` for the slow one. Flat timings (max under twice the min) are all fast.
fn slow_cluster(sent: &[Sent]) -> Vec<bool> {
    let rate = |s: &Sent| s.ttft_ms / s.prompt_tokens.max(1) as f64;
    let mut rates: Vec<f64> = sent.iter().filter(|s| s.turn > 0).map(rate).collect();
    rates.sort_by(|a, b| a.total_cmp(b));
    let threshold = match (rates.first(), rates.last()) {
        (Some(&min), Some(&max)) if max >= 2.0 * min.max(f64::MIN_POSITIVE) => rates
            .windows(2)
            .max_by(|a, b| (a[1] / a[0].max(1e-9)).total_cmp(&(b[1] / b[0].max(1e-9))))
            .map(|w| w[1])
            .unwrap_or(f64::INFINITY),
        _ => f64::INFINITY,
    };
    sent.iter()
        .map(|s| s.turn > 0 && rate(s) >= threshold)
        .collect()
}

/// Predicts cached tokens for a sequence of requests against one cache or per-replica caches.
pub struct Predictor {
    profile: Profile,
    /// Every prompt so far, shared with the replica history it also belongs to.
    single_server: Vec<Rc<[u32]>>,
    per_replica: Vec<Vec<Rc<[u32]>>>,
}

impl Predictor {
    pub fn new(profile: Profile, replicas: usize) -> Self {
        Predictor {
            profile,
            single_server: Vec::new(),
            per_replica: vec![Vec::new(); replicas.max(1)],
        }
    }

    /// (single server, perfect affinity) for the next prompt of `session`, then remembers it.
    pub fn next(&mut self, session: usize, ids: &[u32]) -> (usize, usize) {
        let best = |history: &[Rc<[u32]>]| {
            history
                .iter()
                .map(|h| h.iter().zip(ids).take_while(|(a, b)| a == b).count())
                .max()
                .unwrap_or(0)
        };
        let replica = session % self.per_replica.len();
        let single = self
            .profile
            .cached_tokens(best(&self.single_server), ids.len());
        let affinity = self
            .profile
            .cached_tokens(best(&self.per_replica[replica]), ids.len());
        let ids: Rc<[u32]> = ids.into();
        self.single_server.push(ids.clone());
        self.per_replica[replica].push(ids);
        (single, affinity)
    }
}

/// Sessions with turns on several replicas (or, inferred, a turn that left its cache).
pub fn scattered(
    sent: &[Sent],
    attributions: &[Attribution],
    keys: &[String],
    ms_per_token: Option<f64>,
) -> Vec<ScatteredSession> {
    let mut out = Vec::new();
    for (session, key) in keys.iter().enumerate() {
        let turns: Vec<(&Sent, &Attribution)> = sent
            .iter()
            .zip(attributions)
            .filter(|(s, _)| s.session == session)
            .collect();
        let replicas: Vec<Option<usize>> = turns.iter().map(|(_, a)| a.replica).collect();
        let mut distinct: Vec<usize> = replicas.iter().flatten().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        let moved = distinct.len() > 1 || turns.iter().any(|(_, a)| a.stayed == Some(false));
        if !moved {
            continue;
        }
        let lost_tokens: usize = turns
            .iter()
            .filter(|(s, _)| s.turn > 0)
            .map(|(s, _)| {
                s.predicted_affinity
                    .saturating_sub(s.cached_tokens.unwrap_or(0))
            })
            .sum();
        out.push(ScatteredSession {
            session,
            key: key.clone(),
            replicas,
            lost_tokens,
            lost_ttft_ms: ms_per_token.map(|b| (b * lost_tokens as f64 * 10.0).round() / 10.0),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(activity: f64) -> Option<CacheCounters> {
        Some(CacheCounters {
            activity,
            ..Default::default()
        })
    }

    fn sent(session: usize, turn: usize, cached: Option<usize>, ttft_ms: f64) -> Sent {
        Sent {
            session,
            turn,
            prompt_tokens: 1000,
            cached_tokens: cached,
            ttft_ms,
            deltas: vec![None, None],
            predicted_single_server: if turn == 0 { 0 } else { 900 },
            predicted_affinity: if turn == 0 { 0 } else { 900 },
        }
    }

    #[test]
    fn the_replica_whose_counters_moved_served_it() {
        assert_eq!(replica_from_metrics(&[moved(0.0), moved(12.0)]), Some(1));
        assert_eq!(replica_from_metrics(&[moved(3.0), moved(12.0)]), None);
        assert_eq!(replica_from_metrics(&[None, moved(0.0)]), None);
    }

    #[test]
    fn metrics_attribution_finds_scattered_sessions_and_their_cost() {
        let mut requests = vec![
            sent(0, 0, Some(0), 500.0),
            sent(0, 1, Some(0), 500.0),
            sent(1, 0, Some(0), 500.0),
            sent(1, 1, Some(900), 50.0),
        ];
        requests[0].deltas = vec![moved(1000.0), moved(0.0)];
        requests[1].deltas = vec![moved(0.0), moved(1000.0)];
        requests[2].deltas = vec![moved(1000.0), moved(0.0)];
        requests[3].deltas = vec![moved(1000.0), moved(0.0)];
        let attributions = attribute(&requests);
        assert!(attributions.iter().all(|a| a.by == AttributedBy::Metrics));
        let keys = vec!["a".to_owned(), "b".to_owned()];
        let out = scattered(&requests, &attributions, &keys, Some(0.5));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].session, 0);
        assert_eq!(out[0].replicas, vec![Some(0), Some(1)]);
        assert_eq!(out[0].lost_tokens, 900);
        assert_eq!(out[0].lost_ttft_ms, Some(450.0));
    }

    #[test]
    fn without_counters_cached_tokens_then_ttft_decide() {
        let requests = vec![
            sent(0, 0, Some(0), 500.0),
            sent(0, 1, Some(100), 450.0),
            sent(1, 0, Some(0), 500.0),
            sent(1, 1, Some(890), 60.0),
        ];
        let a = attribute(&requests);
        assert_eq!(a[0].by, AttributedBy::Unknown);
        assert_eq!((a[1].by, a[1].stayed), (AttributedBy::Cache, Some(false)));
        assert_eq!(a[3].stayed, Some(true));

        let timed: Vec<Sent> = requests
            .iter()
            .map(|s| Sent {
                cached_tokens: None,
                ..s.clone()
            })
            .collect();
        let a = attribute(&timed);
        assert_eq!((a[1].by, a[1].stayed), (AttributedBy::Ttft, Some(false)));
        assert_eq!(a[3].stayed, Some(true));
    }

    #[test]
    fn predictions_for_one_server_and_for_sticky_sessions() {
        let mut p = Predictor::new(
            Profile::of(crate::cache_profile::CacheProfileKind::Tokens),
            2,
        );
        let shared: Vec<u32> = (0..100).collect();
        let with = |tail: u32| {
            let mut ids = shared.clone();
            ids.extend([tail; 10]);
            ids
        };
        assert_eq!(p.next(0, &with(1)), (0, 0));
        // Session 1 lives on the other replica: only the single server has the shared part.
        assert_eq!(p.next(1, &with(2)), (100, 0));
        assert_eq!(p.next(2, &with(3)), (100, 100));
    }
}
