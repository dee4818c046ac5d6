//! Client partitions of a labelled train split: IID, the two Dirichlet variants, and
//! published index files. All give equal client sizes, sampled without replacement.

use crate::config::{DataSpec, DirichletVariant, Partition, ShardCut};
use crate::error::{Error, Result};
use crate::rng::{Rng, Stream};
use std::path::Path;

/// `data.deal = "round"`: the training split partitioned anew, as `data.partition` says, among
/// round t's `clients` sampled clients (the lists in sampling order), from the round's own
/// stream of run `seed`.
pub fn deal(
    d: &DataSpec,
    (seed, t): (u64, usize),
    labels: &[u8],
    classes: usize,
    clients: usize,
) -> Result<Vec<Vec<usize>>> {
    let round = DataSpec {
        num_clients: clients,
        ..d.clone()
    };
    let mut rng = Rng::derive(seed, Stream::Deal, &[t as u64]);
    partition(&round, labels, classes, &mut rng)
}

/// Partition `labels` (values < `classes`) as the spec's `[data]` says.
pub fn partition(
    d: &DataSpec,
    labels: &[u8],
    classes: usize,
    rng: &mut Rng,
) -> Result<Vec<Vec<usize>>> {
    let n = labels.len();
    if d.partition != Partition::File && d.num_clients > n {
        return Err(Error::Config(format!(
            "key `data.num_clients` ({}) is larger than the {n} training samples allow (at least one each)",
            d.num_clients
        )));
    }
    match d.partition {
        Partition::Iid => Ok(iid(n, d.num_clients, rng)),
        Partition::Dirichlet => match d.variant {
            DirichletVariant::FedacgBalanced => Ok(dirichlet_balanced(
                labels,
                classes,
                d.num_clients,
                d.alpha,
                rng,
            )),
            DirichletVariant::FedexpEqual => Ok(dirichlet_equal(
                labels,
                classes,
                d.num_clients,
                d.alpha,
                rng,
            )),
        },
        Partition::Shards => {
            let count = d.num_clients.checked_mul(d.shards_per_client);
            if count.is_none_or(|c| c > n) {
                return Err(Error::Config(format!(
                    "key `data.shards_per_client` ({}) × `data.num_clients` ({}) shards exceed the {n} training samples (at least one each)",
                    d.shards_per_client, d.num_clients
                )));
            }
            Ok(match d.shard_cut {
                ShardCut::Sorted => shards(labels, d.num_clients, d.shards_per_client, rng),
                ShardCut::Class => {
                    class_shards(labels, classes, d.num_clients, d.shards_per_client, rng)
                }
            })
        }
        Partition::File => {
            let clients = read_index_file(Path::new(&d.partition_file), n)?;
            if clients.len() != d.num_clients {
                return Err(Error::Config(format!(
                    "key `data.num_clients` = {}: the partition file {} (`data.partition_file`) has {} clients; set data.num_clients = {} to use it",
                    d.num_clients,
                    d.partition_file,
                    clients.len(),
                    clients.len()
                )));
            }
            Ok(clients)
        }
        Partition::Natural => Err(Error::Config(format!(
            "data.partition = \"natural\" needs a data set with users (shakespeare, leaf, femnist, celeba), not {}",
            d.dataset
        ))),
    }
}

/// The text inside the first index list of `after` (what follows a client's ':'): `[..]`,
/// `{..}` or `set()` (empty), and the text after it; None if there is none.
fn index_list(after: &str) -> Option<(&str, &str)> {
    let t = after.trim_start();
    if let Some(rest) = t.strip_prefix("set()") {
        return Some(("", rest));
    }
    let close = match t.chars().next()? {
        '[' => ']',
        '{' => '}',
        _ => return None,
    };
    let end = t.find(close)?;
    Some((&t[1..end], &t[end + 1..]))
}

/// The shard split of McMahan et al.: the training indices sorted by label (stable, so equal
/// labels keep data-set order) are cut into `clients × per_client` shards of equal size (the
/// remainder of the division is left out), and each client gets `per_client` shards drawn
/// without replacement. With 10 classes, 100 clients and 2 shards each, every client holds
/// one or two classes.
pub fn shards(labels: &[u8], clients: usize, per_client: usize, rng: &mut Rng) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by_key(|&i| labels[i]);
    let count = clients * per_client;
    let size = labels.len() / count;
    let mut ids: Vec<usize> = (0..count).collect();
    rng.shuffle(&mut ids);
    ids.chunks(per_client)
        .map(|mine| {
            let mut v: Vec<usize> = mine
                .iter()
                .flat_map(|&s| order[s * size..(s + 1) * size].iter().copied())
                .collect();
            rng.shuffle(&mut v);
            v
        })
        .collect()
}

/// Shards cut within each class (`shard_cut = "class"`): the `clients × per_client` shards are
/// shared among the classes in proportion to their sizes (largest remainders, ties to the lower
/// class), each class's indices (data-set order) are cut into its shards of ⌊n_c / k_c⌋ (the
/// remainder unused), and each client gets `per_client` shards at random. Every shard holds one
/// class, so a client holds at most `per_client` classes; shard sizes differ by the classes'.
pub fn class_shards(
    labels: &[u8],
    classes: usize,
    clients: usize,
    per_client: usize,
    rng: &mut Rng,
) -> Vec<Vec<usize>> {
    let count = clients * per_client;
    let mut of_class: Vec<Vec<usize>> = vec![Vec::new(); classes];
    for (i, &l) in labels.iter().enumerate() {
        of_class[l as usize].push(i);
    }
    let n = labels.len();
    let mut k: Vec<usize> = of_class.iter().map(|c| count * c.len() / n).collect();
    let mut rest: Vec<usize> = (0..classes).collect();
    // largest remainder first; a class gets no more shards than samples
    rest.sort_by_key(|&c| std::cmp::Reverse(count * of_class[c].len() % n));
    for &c in rest.iter().cycle().take(classes * count) {
        if k.iter().sum::<usize>() == count {
            break;
        }
        if k[c] < of_class[c].len() {
            k[c] += 1;
        }
    }
    let mut all: Vec<&[usize]> = Vec::with_capacity(count);
    for (c, idx) in of_class.iter().enumerate() {
        if let Some(size) = idx.len().checked_div(k[c]) {
            all.extend(idx.chunks_exact(size).take(k[c]));
        }
    }
    let mut ids: Vec<usize> = (0..all.len()).collect();
    rng.shuffle(&mut ids);
    ids.chunks(per_client)
        .map(|mine| {
            let mut v: Vec<usize> = mine.iter().flat_map(|&s| all[s].iter().copied()).collect();
            rng.shuffle(&mut v);
            v
        })
        .collect()
}

/// IID: a random permutation cut into `clients` equal parts (the remainder is unused).
pub fn iid(n: usize, clients: usize, rng: &mut Rng) -> Vec<Vec<usize>> {
    let per = n / clients;
    let mut perm: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut perm);
    (0..clients)
        .map(|i| perm[i * per..(i + 1) * per].to_vec())
        .collect()
}

/// FedExP/FedNAR "equal" Dirichlet split (§8.1): every client gets ⌊n/clients⌋ samples. Each
/// sample goes to a uniformly chosen client that is not full, with its class drawn from that
/// client's Dirichlet prior restricted to the classes that remain; the next unused sample of
/// the class (dataset order) is assigned. The official code redraws while the client is full
/// or the class is exhausted; this draws from the same distribution and cannot stall.
pub fn dirichlet_equal(
    labels: &[u8],
    classes: usize,
    clients: usize,
    alpha: f64,
    rng: &mut Rng,
) -> Vec<Vec<usize>> {
    let per = labels.len() / clients;
    let priors: Vec<Vec<f64>> = (0..clients)
        .map(|_| rng.dirichlet(alpha, classes))
        .collect();
    let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); classes];
    for (i, &l) in labels.iter().enumerate() {
        by_class[l as usize].push(i);
    }
    let mut taken = vec![0usize; classes];
    let mut out: Vec<Vec<usize>> = vec![Vec::with_capacity(per); clients];
    let mut open: Vec<usize> = (0..clients).collect();
    for _ in 0..per * clients {
        let slot = rng.below(open.len());
        let c = open[slot];
        let weights: Vec<f64> = (0..classes)
            .map(|k| {
                if taken[k] < by_class[k].len() {
                    priors[c][k]
                } else {
                    0.0
                }
            })
            .collect();
        let total: f64 = weights.iter().sum();
        let k = if total > 0.0 {
            let u = rng.uniform() * total;
            let mut acc = 0.0;
            let mut pick = None;
            for (k, w) in weights.iter().enumerate() {
                acc += w;
                if u < acc {
                    pick = Some(k);
                    break;
                }
            }
            // u·total rounded up to total: the last class with weight
            pick.unwrap_or_else(|| weights.iter().rposition(|&w| w > 0.0).unwrap())
        } else {
            // no prior mass on any remaining class: a uniform remaining class
            let rem: Vec<usize> = (0..classes)
                .filter(|&k| taken[k] < by_class[k].len())
                .collect();
            rem[rng.below(rem.len())]
        };
        out[c].push(by_class[k][taken[k]]);
        taken[k] += 1;
        if out[c].len() == per {
            open.swap_remove(slot);
        }
    }
    for c in &mut out {
        rng.shuffle(c);
    }
    out
}

/// FedACG "balanced" Dirichlet split (§8.2): clients in turn draw p ~ Dir(α) and take
/// ⌊n/clients⌋ of the not-yet-assigned samples without replacement, with probability
/// proportional to p[label]. Weighted sampling without replacement is done with
/// Efraimidis–Spirakis keys u^(1/w), which has the distribution of successive draws.
pub fn dirichlet_balanced(
    labels: &[u8],
    classes: usize,
    clients: usize,
    alpha: f64,
    rng: &mut Rng,
) -> Vec<Vec<usize>> {
    let per = labels.len() / clients;
    let mut free: Vec<usize> = (0..labels.len()).collect();
    let mut out = Vec::with_capacity(clients);
    for _ in 0..clients {
        let p = rng.dirichlet(alpha, classes);
        let mut keyed: Vec<(f64, usize)> = free
            .iter()
            .map(|&i| {
                let w = p[labels[i] as usize];
                let u = 1.0 - rng.uniform(); // (0, 1]
                // log key = ln(u)/w; weight 0 never drawn unless nothing else remains
                let key = if w > 0.0 {
                    u.ln() / w
                } else {
                    f64::NEG_INFINITY
                };
                (key, i)
            })
            .collect();
        // largest keys first; ties (all -inf) keep index order for determinism
        keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut chosen: Vec<usize> = keyed[..per].iter().map(|&(_, i)| i).collect();
        let mut chosen_sorted = chosen.clone();
        chosen_sorted.sort_unstable();
        free.retain(|i| chosen_sorted.binary_search(i).is_err());
        rng.shuffle(&mut chosen);
        out.push(chosen);
    }
    out
}

/// Read a published split: one Python dict literal `{client_id: [indices], ...}` (FedACG's
/// Dirichlet files) or `{client_id: {indices}, ...}` (its IID files, Python set literals; an
/// empty one is `set()`). Checks that the client ids are 0..K−1 once each and that the indices
/// are in range and disjoint.
pub fn read_index_file(path: &Path, n: usize) -> Result<Vec<Vec<usize>>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Data(format!(
            "cannot read partition file {}: {e}",
            path.display()
        ))
    })?;
    let bad = |what: &str| {
        Error::Data(format!(
            "{}: {what} (expected a dict literal {{client_id: [indices], ...}} or {{client_id: {{indices}}, ...}})",
            path.display()
        ))
    };
    let body = text.trim();
    let body = body
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .ok_or_else(|| bad("no surrounding braces"))?;
    let mut clients: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut rest = body;
    while !rest.trim().is_empty() {
        let (key, after) = rest.split_once(':').ok_or_else(|| bad("missing ':'"))?;
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .trim_matches(['\'', '"']);
        let id: usize = key
            .parse()
            .map_err(|_| bad(&format!("bad client id {key:?}")))?;
        let (list, next) = index_list(after).ok_or_else(|| {
            bad(&format!(
                "client {id}: no list [..] or set {{..}} of indices after its ':'"
            ))
        })?;
        let mut idx = Vec::new();
        for tok in list.split(',') {
            let tok = tok.trim();
            if tok.is_empty() {
                continue;
            }
            let v: usize = tok
                .parse()
                .map_err(|_| bad(&format!("bad index {tok:?}")))?;
            if v >= n {
                return Err(bad(&format!(
                    "index {v} out of range (the data set has {n} samples)"
                )));
            }
            idx.push(v);
        }
        if clients.iter().any(|c| c.0 == id) {
            return Err(bad(&format!("client {id} appears twice")));
        }
        clients.push((id, idx));
        rest = next;
    }
    clients.sort_by_key(|c| c.0);
    if let Some((k, (id, _))) = clients.iter().enumerate().find(|(k, c)| c.0 != *k) {
        return Err(bad(&format!(
            "client ids must be 0..{} (one each); client {k} is missing (the next id is {id})",
            clients.len() - 1
        )));
    }
    let mut seen = vec![false; n];
    for (id, idx) in &clients {
        for &i in idx {
            if std::mem::replace(&mut seen[i], true) {
                return Err(bad(&format!("index {i} appears twice (client {id})")));
            }
        }
    }
    Ok(clients.into_iter().map(|c| c.1).collect())
}
