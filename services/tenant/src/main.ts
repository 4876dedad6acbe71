import { runService } from '@cairn/runtime';
import { tenantService } from './service.js';

runService(tenantService());
