//! Where a model's parameters live in its flat vector. The FL state (global model, deltas,
//! control variates, server moments) is plain `Vec<f32>`; a [`Layout`] records where each
//! parameter tensor lives in it, in the model's order, with its path and the parts that own it
//! (e.g. `Cnn.fcs.0.weight`, owned by a `Linear` in a `Vec` of the `Cnn`). The paths and owners
//! are those of the burn modules fedrun's models were first written as, so the initialisation
//! ([`super::init`]) and the order of a checkpoint's vector are unchanged
//! (`tests/golden/layouts.txt` pins every model's).

#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    /// Field names from the root, e.g. `ResNet.blocks.0.conv1.weight`.
    pub names: Vec<String>,
    /// The part that holds each level, e.g. `Struct:Linear` for the last level of a weight.
    pub containers: Vec<String>,
    pub shape: Vec<usize>,
    pub offset: usize,
    pub len: usize,
    /// What it is to the initialisation, as the leaf that wrote it says.
    pub role: Role,
}

/// What a parameter tensor is to the initialisation ([`super::init`]), set by the leaf that
/// writes it (no type name is read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A layer's weight, of fan-in `fan_in` (a linear layer's inputs; a convolution's input
    /// channels times its window).
    Weight {
        fan_in: usize,
    },
    /// A layer's bias: its weight's fan-in.
    Bias {
        fan_in: usize,
    },
    /// A norm's scale and shift.
    Gamma,
    Beta,
    /// An embedding table.
    Embedding,
    /// A recurrent layer's weight or bias, of `hidden` units.
    Recurrent {
        hidden: usize,
        bias: bool,
    },
    /// An attention projection's weight, of width `d`: the output's, or one of the stacked input
    /// projection's (query, key, value).
    Attention {
        d: usize,
        output: bool,
    },
    /// An attention projection's bias.
    AttentionBias,
}

impl Role {
    /// Whether it is a bias or a norm's shift (zero in both initialisations).
    pub fn is_shift(self) -> bool {
        matches!(
            self,
            Role::Bias { .. }
                | Role::Beta
                | Role::AttentionBias
                | Role::Recurrent { bias: true, .. }
        )
    }
}

impl TensorInfo {
    pub fn path(&self) -> String {
        self.names.join(".")
    }
    pub fn name(&self) -> &str {
        self.names.last().map(|s| s.as_str()).unwrap_or("")
    }
    /// The type that owns the parameter, e.g. `Linear`.
    pub fn owner(&self) -> &str {
        self.containers
            .last()
            .map(|s| s.trim_start_matches("Struct:"))
            .unwrap_or("")
    }
    pub fn range(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.len
    }
}

/// Where every parameter tensor lives in the flat vector.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Layout {
    pub tensors: Vec<TensorInfo>,
    pub total: usize,
    /// The parameters counted in `u128`, saturating: what a size estimate reads, for widths no
    /// `usize` product holds (the layout of such a model is never allocated).
    pub count: u128,
    /// Ranges whose values `model.identical_layers` copies, each to an offset (the
    /// transformer's first encoder layer into each of the others).
    pub repeats: Vec<(std::ops::Range<usize>, usize)>,
    /// The floats a sample's forward keeps, declared with the layers that keep them.
    pub kept: Kept,
}

/// The floats one sample keeps, in `u128` and saturating, added up as a model declares its
/// layers ([`Builder::keeps`]): what a size estimate reads for the activations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Kept {
    /// Held through a training step: the batch's copy and what each layer's backward reads.
    pub train: u128,
    /// The most held at once in an evaluation (no autodiff: a layer's input freed once the next
    /// has read it).
    pub eval: u128,
    /// What a GPU cohort's batched convolutions ([`crate::kernels::conv2d_batched`]) keep more
    /// through a step, a copy's sample: each convolution's gathered columns.
    pub columns: u128,
    /// The most their backward holds at once besides, a copy's sample: one convolution's
    /// columns' gradient, its output's gradient laid out for the product, its input's gradient.
    pub columns_transient: u128,
}

impl Layout {
    /// Where each tensor lives in the flat vector, in order.
    pub fn ranges(&self) -> Vec<std::ops::Range<usize>> {
        self.tensors.iter().map(TensorInfo::range).collect()
    }

    /// Where each convolution's weight lives (a weight of four axes: out and in channels, the
    /// window's two), in order.
    pub fn conv_weights(&self) -> Vec<std::ops::Range<usize>> {
        let conv = |t: &&TensorInfo| matches!(t.role, Role::Weight { .. }) && t.shape.len() == 4;
        self.tensors
            .iter()
            .filter(conv)
            .map(TensorInfo::range)
            .collect()
    }
}

/// A parameter tensor of a model: its place in the layout's list of tensors (the forward reads
/// it by this, with no cursor to move).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param(pub usize);

/// A linear layer's parameters: weight `[in, out]`, bias `[out]`.
#[derive(Clone, Copy, Debug)]
pub struct Linear {
    pub weight: Param,
    pub bias: Param,
}

/// A convolution's parameters: weight `[out, in, k, k]`, its bias if it has one.
#[derive(Clone, Copy, Debug)]
pub struct Conv {
    pub weight: Param,
    pub bias: Option<Param>,
}

/// A norm's γ and β `[c]`.
#[derive(Clone, Copy, Debug)]
pub struct Norm {
    pub gamma: Param,
    pub beta: Param,
}

/// A layout written in a model's order: scopes (a field name in the part that holds it) and
/// tensors.
pub struct Builder {
    names: Vec<String>,
    containers: Vec<String>,
    layout: Layout,
}

impl Builder {
    /// The layout of a model named `root` (`Cnn`, `ResNet`, …; its part is the `Model` enum).
    pub fn new(root: &str) -> Builder {
        Builder {
            names: vec![root.to_string()],
            containers: vec!["Enum:Model".to_string()],
            layout: Layout::default(),
        }
    }

    /// Run `f` inside the field `name` of the part `ty` (a type name, `Vec` or `Tuple`).
    pub fn scope<T>(&mut self, name: &str, ty: &str, f: impl FnOnce(&mut Builder) -> T) -> T {
        self.names.push(name.to_string());
        self.containers.push(Self::container(ty));
        let out = f(self);
        self.names.pop();
        self.containers.pop();
        out
    }

    fn container(ty: &str) -> String {
        match ty {
            "Vec" | "Tuple" => ty.to_string(),
            t => format!("Struct:{t}"),
        }
    }

    /// A tensor `name` of the part `ty`, of `shape`, its `role` to the initialisation.
    pub fn tensor(&mut self, name: &str, ty: &str, shape: &[usize], role: Role) -> Param {
        let at = Param(self.layout.tensors.len());
        let count = (shape.iter()).fold(1u128, |n, &d| n.saturating_mul(d as u128));
        let len = usize::try_from(count).unwrap_or(usize::MAX);
        let mut names = self.names.clone();
        names.push(name.to_string());
        let mut containers = self.containers.clone();
        containers.push(Self::container(ty));
        self.layout.tensors.push(TensorInfo {
            names,
            containers,
            shape: shape.to_vec(),
            offset: self.layout.total,
            len,
            role,
        });
        self.layout.total = self.layout.total.saturating_add(len);
        self.layout.count = self.layout.count.saturating_add(count);
        at
    }

    /// A linear layer `name` of `parent`: its weight `[din, dout]` and bias `[dout]`.
    pub fn linear(&mut self, name: &str, parent: &str, din: usize, dout: usize) -> Linear {
        let roles = [Role::Weight { fan_in: din }, Role::Bias { fan_in: din }];
        self.scope(name, parent, |b| b.linear_here("Linear", din, dout, roles))
    }

    /// A linear layer `name` of `parent` whose weight and bias initialise as `roles` say (a
    /// recurrent layer's, an attention projection's), its part named `ty`.
    pub fn linear_as(
        &mut self,
        (name, parent, ty): (&str, &str, &str),
        din: usize,
        dout: usize,
        roles: [Role; 2],
    ) -> Linear {
        self.scope(name, parent, |b| b.linear_here(ty, din, dout, roles))
    }

    /// A linear layer's weight `[din, dout]` and bias `[dout]` in the current scope (softmax
    /// regression's, at the model's root), of the part `ty`.
    pub fn linear_here(&mut self, ty: &str, din: usize, dout: usize, roles: [Role; 2]) -> Linear {
        Linear {
            weight: self.tensor("weight", ty, &[din, dout], roles[0]),
            bias: self.tensor("bias", ty, &[dout], roles[1]),
        }
    }

    /// An embedding `name` of `parent`: its table `[rows, cols]`.
    pub fn embedding(&mut self, name: &str, parent: &str, rows: usize, cols: usize) -> Param {
        self.scope(name, parent, |b| {
            b.tensor("weight", "Embedding", &[rows, cols], Role::Embedding)
        })
    }

    /// A convolution `name` of `parent`: its weight `[out, in, k, k]` and its bias if `bias`.
    pub fn conv(&mut self, name: &str, parent: &str, shape: [usize; 4], bias: bool) -> Conv {
        let fan_in = shape[1..].iter().product();
        self.scope(name, parent, |b| Conv {
            weight: b.tensor("weight", "Conv2d", &shape, Role::Weight { fan_in }),
            bias: bias.then(|| b.tensor("bias", "Conv2d", &[shape[0]], Role::Bias { fan_in })),
        })
    }

    /// A norm `name` (of the type `ty`) of `parent`: its γ and β `[c]`.
    pub fn norm(&mut self, name: &str, parent: &str, ty: &str, c: usize) -> Norm {
        self.scope(name, parent, |b| Norm {
            gamma: b.tensor("gamma", ty, &[c], Role::Gamma),
            beta: b.tensor("beta", ty, &[c], Role::Beta),
        })
    }

    /// A layer just declared keeps `train` more floats a sample through a training step, and an
    /// evaluation holds `live` floats a sample at once at it.
    pub fn keeps(&mut self, train: u128, live: u128) {
        let k = &mut self.layout.kept;
        k.train = k.train.saturating_add(train);
        k.eval = k.eval.max(live);
    }

    /// What a GPU cohort's batched form of a convolution of weight `[o, c, kh, kw]` from maps of
    /// `map` positions to maps of `l` keeps a copy's sample ([`Kept::columns`]): its columns,
    /// `c·kh·kw` a position. Its backward holds at once besides the columns' gradient, the
    /// output gradient's copy laid out for the product, and the input's gradient (the columns'
    /// adjoint writes it directly: `kernels::ext_columns`).
    pub fn keeps_columns(&mut self, [o, c, kh, kw]: [usize; 4], map: usize, l: usize) {
        let (c, l) = (c as u128, l as u128);
        let kept = c.saturating_mul((kh * kw) as u128).saturating_mul(l);
        let k = &mut self.layout.kept;
        k.columns = k.columns.saturating_add(kept);
        let transient = kept
            .saturating_add((o as u128).saturating_mul(l))
            .saturating_add(c.saturating_mul(map as u128));
        k.columns_transient = k.columns_transient.max(transient);
    }

    /// What a linear layer from `din` to `dout` keeps a sample: its output and the next op's (its
    /// ReLU, the head's, the loss's softmax) through a training step; its input and output at
    /// once in an evaluation.
    pub fn keeps_linear(&mut self, din: usize, dout: usize) {
        let d = dout as u128;
        self.keeps(2 * d, din as u128 + d);
    }

    /// The shape of parameter `p`.
    pub fn shape(&self, p: Param) -> &[usize] {
        &self.layout.tensors[p.0].shape
    }

    /// Where parameter `p` starts in the flat vector.
    pub fn offset(&self, p: Param) -> usize {
        self.layout.tensors[p.0].offset
    }

    /// Mark `range` as copied to `to` by `model.identical_layers`.
    pub fn repeat(&mut self, range: std::ops::Range<usize>, to: usize) {
        self.layout.repeats.push((range, to));
    }

    /// The layout written.
    pub fn finish(self) -> Layout {
        self.layout
    }
}
