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
}

impl Layout {
    /// Where each tensor lives in the flat vector, in order.
    pub fn ranges(&self) -> Vec<std::ops::Range<usize>> {
        self.tensors.iter().map(TensorInfo::range).collect()
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

    /// A tensor `name` of the part `ty`, of `shape`.
    pub fn tensor(&mut self, name: &str, ty: &str, shape: &[usize]) -> Param {
        let at = Param(self.layout.tensors.len());
        let len: usize = shape.iter().product();
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
        });
        self.layout.total += len;
        at
    }

    /// A linear layer `name` of `parent`: its weight `[din, dout]` and bias `[dout]`.
    pub fn linear(&mut self, name: &str, parent: &str, din: usize, dout: usize) -> Linear {
        self.scope(name, parent, |b| Linear {
            weight: b.tensor("weight", "Linear", &[din, dout]),
            bias: b.tensor("bias", "Linear", &[dout]),
        })
    }

    /// A convolution `name` of `parent`: its weight `[out, in, k, k]` and its bias if `bias`.
    pub fn conv(&mut self, name: &str, parent: &str, shape: [usize; 4], bias: bool) -> Conv {
        self.scope(name, parent, |b| Conv {
            weight: b.tensor("weight", "Conv2d", &shape),
            bias: bias.then(|| b.tensor("bias", "Conv2d", &[shape[0]])),
        })
    }

    /// A norm `name` (of the type `ty`) of `parent`: its γ and β `[c]`.
    pub fn norm(&mut self, name: &str, parent: &str, ty: &str, c: usize) -> Norm {
        self.scope(name, parent, |b| Norm {
            gamma: b.tensor("gamma", ty, &[c]),
            beta: b.tensor("beta", ty, &[c]),
        })
    }

    /// The layout written.
    pub fn finish(self) -> Layout {
        self.layout
    }
}
