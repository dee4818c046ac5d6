//! Federated data sets held in memory: one train split, one test split, and each client's
//! list of train indices. Images are normalised once at load time; a batch is a gather (plus
//! the augmentation) into one host buffer and one tensor upload.
//!
//! | file | what |
//! |---|---|
//! | `fed.rs` | the data set in memory: splits, features, clients; a batch's input |
//! | `fingerprint.rs` | a CRC-32 of the loaded data, so that a resume can tell it has the data it ran on |
//! | `load.rs` | loading the data set a spec names, and its partition |
//! | `unread.rs` | which `[data]` keys a spec's data set and partition leave unread, and why |
//! | `check.rs` | what a spec needs of its data set, checked before anything loads |
//! | `batch.rs` | gathering a batch, augmented, onto the device |
//! | `info.rs` | what each data set gives (input, classes, users) before it loads |
//! | `cifar.rs`, `cifar100.rs`, `tiny_imagenet.rs`, `idx.rs`, `leaf.rs`, `leaf_images.rs`, `plays.rs`, `shakespeare.rs`, `tar.rs` | readers of the real formats |
//! | `jpeg.rs`, `image_cache.rs` | JPEG decoding, and the decoded images cached beside the data |
//! | `synthetic.rs` | generated data for tests |
//! | `partition.rs` | IID, Dirichlet, shards and published index files |
//! | `probe.rs` | whether a spec's data is there and reads as its format, for `fedrun check` |
//! | `augment.rs` | random crop and flip |
//! | `rotate_crop_flip.rs` | the FedACG code's rotation, crop and flip, in pixel space |

pub mod augment;
mod batch;
mod check;
pub mod cifar;
pub mod cifar100;
mod device_batch;
mod fed;
mod fingerprint;
pub mod idx;
pub mod image_cache;
mod info;
pub mod jpeg;
pub mod leaf;
pub mod leaf_images;
mod load;
pub mod partition;
pub mod plays;
pub mod probe;
pub mod resident;
pub mod rotate_crop_flip;
pub mod shakespeare;
pub mod synthetic;
pub mod tar;
pub mod tiny_imagenet;
mod unread;

pub use batch::batch;
pub use check::check_spec;
pub use device_batch::{Kept, draw_maps, kept, map_len};
pub use fed::{Augment, Features, FedData, Input, Split};
pub use fingerprint::fingerprint;
pub use info::{Info, Sample, info};
pub use load::{load, path_of, recorded};
pub use unread::unread_keys;
