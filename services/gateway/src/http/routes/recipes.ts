import { Router } from 'express';
import type { PlanName } from '@cairn/catalog';
import { recipeAvailable } from '../../domain/recipes.js';
import type { RecipeCatalog } from '../../store/recipes.js';
import { requireScope } from '../auth.js';

export function recipeRoutes(deps: { recipes: RecipeCatalog }): Router {
  const router = Router();
  router.get('/v1/recipes', requireScope('read'), async (req, res) => {
    const plan = req.auth!.tenant.plan as PlanName;
    const recipes = await deps.recipes.list();
    res.json({ data: recipes.map((recipe) => ({ ...recipe, available: recipeAvailable(recipe, plan) })) });
  });
  return router;
}
