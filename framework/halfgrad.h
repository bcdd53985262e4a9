#pragma once
// framework/halfgrad.h — everything the engine offers: tensors, autograd, ops.
//
//   #include "framework/halfgrad.h"
//   hg::Generator gen(0);
//   hg::Tensor w = hg::Tensor::randn({3, 2}, gen).requires_grad_();
//   hg::Tensor loss = hg::sum(hg::relu(hg::matmul(x, w)));
//   loss.backward();                       // w.grad() now holds dloss/dw
#include "framework/autograd/autograd.h"
#include "framework/ops/ops.h"
#include "framework/tensor/device.h"
#include "framework/tensor/dtype.h"
#include "framework/tensor/generator.h"
#include "framework/tensor/tensor.h"
