//! Latencies and the figures printed from them.

use std::time::Duration;

/// What one phase measured.
#[derive(Clone, Debug, Default)]
pub struct Phase {
    /// Latencies of the operations that succeeded, in microseconds.
    pub micros: Vec<u64>,
    /// Operations that failed.
    pub errors: u64,
    /// Bytes moved (bodies sent and received).
    pub bytes: u64,
    /// Keys listed or deleted (LIST and DeleteObjects move many keys an operation).
    pub keys: u64,
    /// Wall time of the phase.
    pub wall: Duration,
}

impl Phase {
    /// Folds another worker's figures into this.
    pub fn absorb(&mut self, other: Phase) {
        self.micros.extend(other.micros);
        self.errors += other.errors;
        self.bytes += other.bytes;
        self.keys += other.keys;
    }

    /// Operations per second.
    pub fn ops(&self) -> f64 {
        self.micros.len() as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// MB/s (10^6 bytes).
    pub fn mbps(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Keys per second.
    pub fn keys_per_sec(&self) -> f64 {
        self.keys as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// The `q` quantile (0..1) of the latencies in milliseconds (nearest rank).
    pub fn quantile_ms(&self, q: f64) -> f64 {
        quantile(&self.micros, q) as f64 / 1000.0
    }
}

/// The `q` quantile by nearest rank (0 for none).
pub fn quantile(v: &[u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[rank - 1]
}

/// A byte size: digits with an optional `KiB`/`MiB`/`GiB` (or `k`/`m`/`g`, binary) suffix.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: u64 = n.parse().map_err(|_| format!("{s:?} is not a size"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("{s:?}: unknown unit")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(quantile(&v, 0.5), 500);
        assert_eq!(quantile(&v, 0.99), 990);
        assert_eq!(quantile(&v, 0.999), 999);
        assert_eq!(quantile(&[], 0.5), 0);
        assert_eq!(quantile(&[7], 0.999), 7);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("123"), Ok(123));
        assert!(parse_size("x").is_err());
        assert!(parse_size("4 parsecs").is_err());
    }
}
