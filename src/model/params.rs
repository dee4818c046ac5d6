//! Flat access to a model's parameters. The FL state (global model, deltas, control variates,
//! server moments) is plain `Vec<f32>` in the module's fixed visit order; a [`Layout`] records
//! where each parameter tensor lives in it, with its path and the modules that own it.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::Gradients;
use burn::tensor::{Tensor, TensorData};

use super::Model;

#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    /// Field names from the root, e.g. `ResNet.blocks.0.conv1.weight`.
    pub names: Vec<String>,
    /// The container type of each level, e.g. `Struct:Linear` for the last level of a weight.
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
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub tensors: Vec<TensorInfo>,
    pub total: usize,
}

struct LayoutVisitor {
    names: Vec<String>,
    containers: Vec<String>,
    out: Vec<TensorInfo>,
    total: usize,
}

impl ModuleVisitor for LayoutVisitor {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.names.push(name.to_string());
        self.containers.push(container_type.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.names.pop();
        self.containers.pop();
    }
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let shape = param.lazy_shape().to_vec();
        let len: usize = shape.iter().product();
        self.out.push(TensorInfo {
            names: self.names.clone(),
            containers: self.containers.clone(),
            shape,
            offset: self.total,
            len,
        });
        self.total += len;
    }
}

impl Layout {
    pub fn of(model: &Model) -> Layout {
        let mut v = LayoutVisitor {
            names: Vec::new(),
            containers: Vec::new(),
            out: Vec::new(),
            total: 0,
        };
        model.visit(&mut v);
        Layout {
            tensors: v.out,
            total: v.total,
        }
    }
}

struct Reader<'a> {
    out: &'a mut [f32],
    pos: usize,
}

impl ModuleVisitor for Reader<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let data = param.val().into_data().convert::<f32>();
        let s = data.as_slice::<f32>().expect("f32 data");
        self.out[self.pos..self.pos + s.len()].copy_from_slice(s);
        self.pos += s.len();
    }
}

/// Copy all parameters into `out` (its length must be the layout's total).
pub fn read_params(model: &Model, out: &mut [f32]) {
    let mut r = Reader { out, pos: 0 };
    model.visit(&mut r);
    assert_eq!(
        r.pos,
        r.out.len(),
        "flat vector length does not match the model"
    );
}

struct Writer<'a> {
    src: &'a [f32],
    pos: usize,
}

impl ModuleMapper for Writer<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, t, mapper) = param.consume();
        let shape = t.shape();
        let n = shape.num_elements();
        let device = t.device();
        let req = t.is_require_grad();
        drop(t);
        let mut nt = Tensor::<D>::from_data(
            TensorData::new(self.src[self.pos..self.pos + n].to_vec(), shape),
            &device,
        );
        self.pos += n;
        if req {
            nt = nt.require_grad();
        }
        Param::from_mapped_value(id, nt, mapper)
    }
}

/// Replace all parameters by the values in `src`.
pub fn write_params(model: Model, src: &[f32]) -> Model {
    let mut w = Writer { src, pos: 0 };
    let m = model.map(&mut w);
    assert_eq!(
        w.pos,
        src.len(),
        "flat vector length does not match the model"
    );
    m
}

struct GradReader<'a> {
    grads: &'a mut Gradients,
    out: &'a mut [f32],
    pos: usize,
}

impl ModuleVisitor for GradReader<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let v = param.val();
        let n = v.shape().num_elements();
        // taken out of `grads`, so the tensor is this call's alone and its data moves out
        // without the copy that a shared tensor's `into_data` makes
        match v.grad_remove(self.grads) {
            Some(g) => {
                let data = g.into_data().convert::<f32>();
                self.out[self.pos..self.pos + n]
                    .copy_from_slice(data.as_slice::<f32>().expect("f32"));
            }
            None => self.out[self.pos..self.pos + n].fill(0.0),
        }
        self.pos += n;
    }
}

/// Move the gradient of every parameter out of `grads` into `out` (zero where a parameter has
/// none).
pub fn read_grads(model: &Model, grads: &mut Gradients, out: &mut [f32]) {
    let mut r = GradReader { grads, out, pos: 0 };
    model.visit(&mut r);
}

/// Sets every training flag of a model (burn's dropout layers read theirs).
struct TrainingFlags(bool);

impl ModuleMapper for TrainingFlags {
    fn map_flag(&mut self, flag: Param<burn::module::Flag>) -> Param<burn::module::Flag> {
        flag.with_value(self.0)
    }
}

/// The model with its dropout on (`true`, training) or off (`false`: the evaluation-mode
/// forward, still differentiable), parameters untouched.
pub fn with_training(model: Model, on: bool) -> Model {
    model.map(&mut TrainingFlags(on))
}
