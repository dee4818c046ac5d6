//! Golden values of the random streams: the first draws of every stream and one Dirichlet
//! partition of each kind. `rand`, `rand_distr` and `rand_xoshiro` are pinned in Cargo.toml;
//! an upgrade (or a change of the stream design) that changes these numbers changes every
//! partition, initial model and batch order, so it must fail here first, loudly.

use fedrun::data::partition::{dirichlet_balanced, dirichlet_equal};
use fedrun::rng::{Rng, Stream};

const STREAMS: [Stream; 6] = [
    Stream::Partition,
    Stream::Sampling,
    Stream::Init,
    Stream::Local,
    Stream::Dropout,
    Stream::DataSelect,
];

fn draws() -> String {
    let mut out = String::new();
    for s in STREAMS {
        let mut r = Rng::derive(0, s, &[1, 2]);
        out.push_str(&format!("{s:?}: {} {}\n", r.next_u64(), r.next_u64()));
    }
    let mut r = Rng::derive(42, Stream::Local, &[3, 7]);
    out.push_str(&format!("uniform {}\n", r.uniform()));
    out.push_str(&format!("below {}\n", r.below(1000)));
    out.push_str(&format!("normal {}\n", r.normal()));
    out.push_str(&format!("gamma {}\n", r.gamma(0.3)));
    out.push_str(&format!("dirichlet {:?}\n", r.dirichlet(0.5, 4)));
    let mut v: Vec<usize> = (0..8).collect();
    r.shuffle(&mut v);
    out.push_str(&format!("shuffle {v:?}\n"));
    out.push_str(&format!("choose {:?}\n", r.choose_distinct(100, 5)));
    let y: Vec<u8> = (0..200).map(|i| (i * 7 % 10) as u8).collect();
    let eq = dirichlet_equal(&y, 10, 4, 0.3, &mut Rng::derive(0, Stream::Partition, &[]));
    out.push_str(&format!("equal {:?}\n", &eq[0][..10]));
    let bal = dirichlet_balanced(&y, 10, 4, 0.3, &mut Rng::derive(0, Stream::Partition, &[]));
    out.push_str(&format!("balanced {:?}\n", &bal[0][..10]));
    out
}

#[test]
fn streams_and_partitions_have_their_golden_values() {
    let got = draws();
    if std::env::var_os("FEDRUN_BLESS").is_some() {
        println!("{got}");
        return;
    }
    assert_eq!(got, GOLDEN, "the random streams changed:\n{got}");
}

const GOLDEN: &str = "\
Partition: 1669536562637980609 10451567430286690127\n\
Sampling: 14509609379914467560 2303065169201899837\n\
Init: 1392918929325661615 8580116599230473059\n\
Local: 8138409597955492255 5542299998575676476\n\
Dropout: 9026876575649267577 17830045515135636874\n\
DataSelect: 14111783485837255194 1400448868477865782\n\
uniform 0.8241984365014721\n\
below 856\n\
normal 0.47444460349469275\n\
gamma 0.41714420824928533\n\
dirichlet [0.7264322721498707, 0.0029569741465585745, 0.26639548299639565, 0.004215270707175126]\n\
shuffle [5, 4, 0, 6, 1, 2, 7, 3]\n\
choose [91, 38, 14, 47, 27]\n\
equal [27, 127, 21, 32, 141, 3, 22, 153, 187, 91]\n\
balanced [121, 67, 127, 52, 91, 2, 120, 93, 33, 26]\n\
";
